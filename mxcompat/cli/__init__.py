"""The ``mxcompat`` command: ``run`` a legacy script with the patches, ``check`` an install,
list the ``patches``, run a project's tests on every supported MXNet (``matrix``, matrix/),
convert a checkpoint to ``onnx``, ``install`` MXNet with the right NumPy (install/).

``run`` works like ``ddtrace-run``: it puts a ``sitecustomize`` on ``PYTHONPATH`` and
replaces itself with ``python [options] script.py args`` (``exec``), so argv, ``__main__``,
``sys.path[0]``, tracebacks, exit codes and stdin/stdout are exactly Python's own, and every
child process the script starts is patched too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .. import __version__
from .. import onnx as onnx_export
from .._core import facts, registry, settings, traps, versions
from . import onnx as _onnx_command

# mxcompat/_bootstrap: its sitecustomize.py starts every Python that `mxcompat run` starts.
BOOTSTRAP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_bootstrap")

ENVIRONMENT_HELP = settings.HELP

# Python's own one-letter options that `run` hands to the interpreter, read as Python reads
# them: flags may be combined (-OO, -uB), -W/-X take a value, attached or next.
PYTHON_FLAGS = "bBdiOPqsuvx"
PYTHON_VALUED = "WX"
# These make Python skip PYTHONPATH or the site module, which is how the patches get in.
PYTHON_REFUSED = {
    "E": "-E makes Python ignore PYTHONPATH",
    "I": "-I (isolated mode) makes Python ignore PYTHONPATH",
    "S": "-S makes Python skip the site module, which runs sitecustomize",
}

RUN_HELP = (
    """python options (before the target; given to the interpreter as python takes them):
  -u, -O, -OO, -B, -b, -d, -i, -q, -s, -v, -x, -P (3.11+), -W arg, -X opt
                       e.g. mxcompat run -u -W error -X dev train.py
  -m MODULE            run library module MODULE as a script, like python -m
  -E, -I and -S are refused: with them Python would not load mxcompat's bootstrap.

The target is a script, a directory or zip file with __main__.py, -m MODULE, or a
Python command on PATH (a console script such as horovodrun, run by this interpreter);
everything after it belongs to the script.

"""
    + ENVIRONMENT_HELP
)


def _parser():
    parser = argparse.ArgumentParser(
        prog="mxcompat",
        description="Keep legacy Apache MXNet 1.x code working.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=ENVIRONMENT_HELP,
    )
    parser.add_argument("--version", action="version", version="mxcompat " + __version__)
    sub = parser.add_subparsers(
        dest="command", metavar="{run,check,patches,matrix,onnx,scan,install}"
    )
    sub.required = True

    run = sub.add_parser(
        "run",
        help="run a script (or -m module) with every mxcompat patch applied",
        usage="mxcompat run [--freeze PATTERN] [--no-patch NAME] [--numpy-legacy] "
        "[python options] script.py|dir|zip [args...]\n"
        "       mxcompat run [--freeze PATTERN] [--no-patch NAME] [--numpy-legacy] "
        "[python options] "
        "-m package.module [args...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=RUN_HELP,
    )
    run.add_argument(
        "--freeze",
        action="append",
        default=[],
        metavar="PATTERN",
        help="keep parameters matching PATTERN (a name or shell glob) fixed; repeatable",
    )
    run.add_argument(
        "--numpy-legacy",
        action="store_true",
        help="serve NumPy names today's NumPy removed (np.asscalar, np.float, "
        "np.product...) to the script, one warning per name at first use",
    )
    run.add_argument(
        "--no-patch",
        action="append",
        default=[],
        metavar="NAME",
        help="do not apply patch NAME (one of: %s); repeatable" % ", ".join(registry.names()),
    )

    check = sub.add_parser("check", help="run a tiny real scenario per feature on this MXNet")
    check.add_argument("--json", action="store_true", help="print the results as JSON")

    patches = sub.add_parser(
        "patches",
        help="list every patch: what it fixes, whether it applies here, whether it is active",
    )
    patches.add_argument("--json", action="store_true", help="print the list as JSON")
    # Parsed by matrix/ itself (everything after -- is the user's command).
    sub.add_parser(
        "matrix",
        add_help=False,
        help="run a command (your tests) in a fresh env per supported MXNet x "
        "Python x NumPy combination: mxcompat matrix --help",
    )

    # Parsed by scan itself (it needs libcst, which the other commands do not).
    sub.add_parser(
        "scan",
        add_help=False,
        help="find (and --fix) the legacy MXNet traps in Python source: mxcompat scan --help",
    )

    # Parsed by install/ itself.
    sub.add_parser(
        "install",
        add_help=False,
        help="install MXNet with the NumPy mxcompat is tested with on this Python (past the "
        "wheel's numpy<2 pin on Python 3.12-3.15): mxcompat install mxnet==1.9.1",
    )

    to_onnx = sub.add_parser(
        "onnx",
        help="convert a checkpoint (PREFIX-symbol.json, PREFIX-EPOCH.params) to ONNX "
        "with MXNet's own exporter, verified in onnxruntime",
        description="Convert a checkpoint to ONNX with MXNet's own exporter (loss heads become "
        "their inference ops), then run it in onnxruntime against MXNet.  Needs "
        "onnx and onnxruntime: " + onnx_export.INSTALL_HINT,
    )
    to_onnx.add_argument("prefix", metavar="PREFIX")
    to_onnx.add_argument("epoch", metavar="EPOCH", type=int)
    to_onnx.add_argument(
        "--input-shape",
        action="append",
        required=True,
        metavar="N,C,H,W",
        type=_onnx_command.parse_shape,
        help="the shape of the model's input, e.g. 1,3,224,224; "
        "once per input, in the symbol's order",
    )
    to_onnx.add_argument(
        "-o", "--output", metavar="FILE", help="where to write the model (default: PREFIX.onnx)"
    )
    to_onnx.add_argument(
        "--opset",
        type=int,
        metavar="N",
        help="ONNX opset (default: the newest this MXNet's exporter writes)",
    )
    to_onnx.add_argument(
        "--no-verify", action="store_true", help="do not run the model in onnxruntime against MXNet"
    )
    return parser, run


def _append_env(env, key, values):
    old = [v for v in env.get(key, "").split(",") if v.strip()]
    env[key] = ",".join(old + [v for v in values if v not in old])


def _split_run_argv(argv, error):
    """``run``'s arguments as ``(own options, python options, module, target)``: ``module``
    is the ``-m`` module (``None`` for a script) and ``target`` the script and its arguments
    (the module's arguments with ``-m``)."""
    # As Python reads its command line: options come first, and everything from the script
    # name (or from -m MODULE) on belongs to the target, even --freeze or -u.
    own, python = [], []
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token in ("--freeze", "--no-patch"):
            own += argv[i - 1 : i + 1]
            i += 1
        elif token.startswith(("--freeze=", "--no-patch=")) or token in (
            "-h",
            "--help",
            "--numpy-legacy",
        ):
            own.append(token)
        elif token == "--":
            return own, python, None, argv[i:]
        elif token.startswith("--"):
            error("unknown option %s" % token)
        elif token.startswith("-") and token != "-":
            j = 1
            while j < len(token):
                letter = token[j]
                j += 1
                if letter in PYTHON_FLAGS:
                    python.append("-" + letter)
                elif letter in PYTHON_VALUED or letter == "m":
                    value = token[j:]
                    if not value:
                        if i >= len(argv):
                            error("-%s needs an argument" % letter)
                        value = argv[i]
                        i += 1
                    if letter == "m":
                        return own, python, value, argv[i:]
                    python += ["-" + letter, value]
                    break
                elif letter in PYTHON_REFUSED:
                    error(
                        "%s, so mxcompat could not be loaded into the script; run it "
                        "without -%s" % (PYTHON_REFUSED[letter], letter)
                    )
                else:
                    error(
                        "unknown option -%s (Python options run takes: -%s, -W arg, "
                        "-X opt, -m module)" % (letter, ", -".join(PYTHON_FLAGS))
                    )
        else:
            return own, python, None, argv[i - 1 :]
    return own, python, None, []


def _python_command(name):
    """``(path, whether it is a Python script)`` of ``name``, a bare command on PATH (a console
    script such as ``horovodrun``), or ``None``.  Launchers like these start the training
    processes; run by this interpreter, they and their children get the bootstrap."""
    import shutil

    if os.sep in name or (os.altsep and os.altsep in name):
        return None
    path = shutil.which(name)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return None
    return path, first.startswith(b"#!") and b"python" in first


def _run(args, python, module, target, error):
    # Checked here, as freeze() would: in the script each bad one would only be a warning.
    from ..freeze.registry import check_pattern

    for value in args.freeze:
        items = settings.split(value)
        if not items:
            error("--freeze %r names no parameter pattern" % value)
        for item in items:
            try:
                check_pattern(item)
            except (TypeError, ValueError) as exc:
                error("--freeze: %s" % exc)
    unknown = [n for n in args.no_patch if n not in registry.names()]
    if unknown:
        error(
            "--no-patch: unknown patch name(s) %s; known patches: %s"
            % (", ".join(unknown), ", ".join(registry.names()))
        )
    if module is not None:
        argv = [sys.executable] + python + ["-m", module] + target
    elif not target:
        error("name a script, a directory or zip file with __main__.py, or -m module to run")
    else:
        script = target[0]
        # A directory or zip file with __main__.py runs as with `python DIR`.
        if not (os.path.isfile(script) or os.path.isdir(script)):
            found = _python_command(script)
            if found is None:
                sys.stderr.write("mxcompat run: can't open file %r: no such file\n" % script)
                return 2
            if not found[1]:
                sys.stderr.write(
                    "mxcompat run: %r (%s) is not a Python script; run starts Python programs\n"
                    % (script, found[0])
                )
                return 2
            found = found[0]
            target = [found] + target[1:]
        # "--": a script named "-x.py" is still the script, as in `mxcompat run -- -x.py`.
        argv = [sys.executable] + python + ["--"] + target

    env = dict(os.environ)
    paths = [BOOTSTRAP] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != BOOTSTRAP
    ]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if args.freeze:
        _append_env(env, settings.FREEZE, args.freeze)
    if args.no_patch:
        _append_env(env, settings.DISABLE_PATCHES, args.no_patch)
    if args.numpy_legacy:
        env[settings.NUMPY_LEGACY] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    # exec, not a child: the script gets this process (pid, stdin, signals, exit code).
    os.execve(sys.executable, argv, env)
    return 0  # not reached


def _patch_table():
    """Every patch with what it fixes, whether it applies to this MXNet, Python and NumPy,
    and whether it is active, after importing mxnet here (as a program would)."""
    import warnings

    error = None
    mx = None
    try:
        # MXNet 1.6+ warns about NumPy aliases at import; that is not what is asked here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import mxnet as mx
    except Exception as exc:
        error = "cannot import mxnet: %s: %s" % (type(exc).__name__, exc)
    version = facts.parse_version(getattr(mx, "__version__", ""))
    supported = version is not None and facts.is_supported(version)
    active = registry.patched()
    rows = []
    for name in registry.names():
        patch = registry.get(name)
        rows.append(
            {
                "name": name,
                "fixes": " ".join((patch.doc or "").split()),
                # As the registry decides: the supported range, then the patch's own rules
                # (MXNet release, Python and NumPy version).
                "applies": bool(supported and patch.applies_to(version)),
                "active": name in active,
                # The legacy traps it handles, from the one list (docs/troubleshooting.md).
                "traps": [t.symptom for t in traps.for_patch(name)],
            }
        )
    stack = versions.running()
    stack = dict((name, stack[name]) for name in ("mxcompat", "mxnet", "python", "numpy"))
    documented = [t.symptom for t in traps.for_patch(None)]
    return {"patches": rows, "documented": documented, "versions": stack, "error": error}


def _patches(as_json):
    table = _patch_table()
    out = sys.stdout
    if as_json:
        json.dump(table, out, indent=2)
        out.write("\n")
    else:
        width = max(len(r["name"]) for r in table["patches"])
        out.write("%-*s  applies  active  traps  fixes\n" % (width, "patch"))
        for r in table["patches"]:
            line = "%-*s  %-7s  %-6s  %-5d  %s" % (
                width,
                r["name"],
                "yes" if r["applies"] else "no",
                "yes" if r["active"] else "no",
                len(r["traps"]),
                r["fixes"],
            )
            out.write(line.rstrip() + "\n")  # no description under python -OO
        names = ("mxnet", "Python", "NumPy", "mxcompat")
        out.write(versions.stack_line(table["versions"], names) + "\n")
    if table["error"]:
        sys.stderr.write("mxcompat patches: %s, so no patch applies\n" % table["error"])
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser, run_parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "matrix":
        from . import matrix

        return matrix.main(argv[1:])
    if argv and argv[0] == "scan":
        from . import scan

        return scan.main(argv[1:])
    if argv and argv[0] == "install":
        from . import install

        return install.main(argv[1:])
    if argv and argv[0] == "run":
        own, python, module, target = _split_run_argv(argv[1:], run_parser.error)
        args = parser.parse_args(["run"] + own)
        return _run(args, python, module, target, run_parser.error)
    args = parser.parse_args(argv)
    if args.command == "patches":
        return _patches(as_json=args.json)
    if args.command == "onnx":
        return _onnx_command.main(args)
    from . import check

    return check.main(as_json=args.json)
