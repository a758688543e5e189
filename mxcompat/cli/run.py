"""``mxcompat run [python options] script.py|-m module [args]``: a legacy script with the patches.

It works like ``ddtrace-run``: it puts a ``sitecustomize`` on ``PYTHONPATH`` and replaces
itself with ``python [options] script.py args`` (``exec``), so argv, ``__main__``,
``sys.path[0]``, tracebacks, exit codes and stdin/stdout are exactly Python's own, and every
child process the script starts is patched too.
"""

from __future__ import annotations

import argparse
import os
import sys

from .._core import registry, settings
from ._usage import UsageError

# mxcompat/_bootstrap: its sitecustomize.py starts every Python that `mxcompat run` starts.
BOOTSTRAP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_bootstrap")

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
    + settings.HELP
)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
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
    parser.add_argument(
        "--freeze",
        action="append",
        default=[],
        metavar="PATTERN",
        help="keep parameters matching PATTERN (a name or shell glob) fixed; repeatable",
    )
    parser.add_argument(
        "--numpy-legacy",
        action="store_true",
        help="serve NumPy names today's NumPy removed (np.asscalar, np.float, "
        "np.product...) to the script, one warning per name at first use",
    )
    parser.add_argument(
        "--no-patch",
        action="append",
        default=[],
        metavar="NAME",
        help="do not apply patch NAME (one of: %s); repeatable" % ", ".join(registry.names()),
    )
    return parser


def split_argv(argv: list[str]) -> tuple[list[str], dict[str, object]]:
    """``(run's own options, {"python": python options, "module": the -m module or None,
    "target": the script and its arguments})``, read as Python reads its command line."""
    own, python, module, target = _split_run_argv(argv)
    return own, {"python": python, "module": module, "target": target}


def main(args: argparse.Namespace) -> int:
    python, module, target = args.python, args.module, args.target
    # Checked here, as freeze() would: in the script each bad one would only be a warning.
    from ..freeze.registry import check_pattern

    for value in args.freeze:
        items = settings.split(value)
        if not items:
            raise UsageError("--freeze %r names no parameter pattern" % value)
        for item in items:
            try:
                check_pattern(item)
            except (TypeError, ValueError) as exc:
                raise UsageError("--freeze: %s" % exc) from None
    unknown = [n for n in args.no_patch if n not in registry.names()]
    if unknown:
        raise UsageError(
            "--no-patch: unknown patch name(s) %s; known patches: %s"
            % (", ".join(unknown), ", ".join(registry.names()))
        )
    if module is not None:
        argv = [sys.executable] + python + ["-m", module] + target
    elif not target:
        raise UsageError(
            "name a script, a directory or zip file with __main__.py, or -m module to run"
        )
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


def _append_env(env, key, values):
    old = [v for v in env.get(key, "").split(",") if v.strip()]
    env[key] = ",".join(old + [v for v in values if v not in old])


def _split_run_argv(argv):
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
            raise UsageError("unknown option %s" % token)
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
                            raise UsageError("-%s needs an argument" % letter)
                        value = argv[i]
                        i += 1
                    if letter == "m":
                        return own, python, value, argv[i:]
                    python += ["-" + letter, value]
                    break
                elif letter in PYTHON_REFUSED:
                    raise UsageError(
                        "%s, so mxcompat could not be loaded into the script; run it "
                        "without -%s" % (PYTHON_REFUSED[letter], letter)
                    )
                else:
                    raise UsageError(
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
