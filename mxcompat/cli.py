"""The ``mxcompat`` command: ``run`` a legacy script with the patches, ``check`` an install.

``run`` works like ``ddtrace-run``: it puts a ``sitecustomize`` on ``PYTHONPATH`` and
replaces itself with ``python script.py args`` (``exec``), so argv, ``__main__``,
``sys.path[0]``, tracebacks, exit codes and stdin/stdout are exactly Python's own, and every
child process the script starts is patched too.
"""
import argparse
import os
import sys

from . import _patching

ENV_FREEZE = "MXCOMPAT_FREEZE"
BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")

ENVIRONMENT_HELP = """environment variables (read by every process that imports mxcompat):
  MXCOMPAT_DISABLE=1               apply no patch at all
  MXCOMPAT_DISABLE_PATCHES=a,b     apply every patch but these
  MXCOMPAT_FREEZE=p1,p2            freeze these parameter names / globs at import
"""


def _parser():
    parser = argparse.ArgumentParser(
        prog="mxcompat",
        description="Keep legacy Apache MXNet 1.x code working.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=ENVIRONMENT_HELP)
    sub = parser.add_subparsers(dest="command", metavar="{run,check}")
    sub.required = True

    run = sub.add_parser(
        "run", help="run a script (or -m module) with every mxcompat patch applied",
        usage="mxcompat run [options] script.py [args...]\n"
              "       mxcompat run [options] -m package.module [args...]",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=ENVIRONMENT_HELP)
    run.add_argument("--freeze", action="append", default=[], metavar="PATTERN",
                     help="keep parameters matching PATTERN (a name or shell glob) fixed; "
                          "repeatable")
    run.add_argument("--no-patch", action="append", default=[], metavar="NAME",
                     help="do not apply patch NAME (one of: %s); repeatable"
                          % ", ".join(_patching.names()))
    run.add_argument("-m", dest="module", metavar="MODULE",
                     help="run library module MODULE as a script, like python -m")
    run.add_argument("target", nargs="*",
                     help="script.py and its arguments (or, with -m, the module's arguments)")

    check = sub.add_parser("check", help="run a tiny real scenario per feature on this MXNet")
    check.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser


def _append_env(env, key, values):
    old = [v for v in env.get(key, "").split(",") if v.strip()]
    env[key] = ",".join(old + [v for v in values if v not in old])


def _run(args, parser):
    unknown = [n for n in args.no_patch if n not in _patching.names()]
    if unknown:
        parser.error("--no-patch: unknown patch name(s) %s; known patches: %s"
                     % (", ".join(unknown), ", ".join(_patching.names())))
    if args.module:
        argv = [sys.executable, "-m", args.module] + args.target
    else:
        if not args.target:
            parser.error("run: name a script (or -m module) to run")
        script = args.target[0]
        if not os.path.isfile(script):
            sys.stderr.write("mxcompat run: can't open file %r: no such file\n" % script)
            return 2
        argv = [sys.executable] + args.target

    env = dict(os.environ)
    paths = [BOOTSTRAP] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                           if p and p != BOOTSTRAP]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if args.freeze:
        _append_env(env, ENV_FREEZE, args.freeze)
    if args.no_patch:
        _append_env(env, _patching.ENV_DISABLE_PATCHES, args.no_patch)
    sys.stdout.flush()
    sys.stderr.flush()
    # exec, not a child: the script gets this process (pid, stdin, signals, exit code).
    os.execve(sys.executable, argv, env)
    return 0  # not reached


def _split_run_argv(argv):
    """Split ``run``'s own options from the target, as Python does: everything from the
    script name (or from ``-m MODULE``) on belongs to the target, even ``--freeze``."""
    own = []
    i = 1
    while i < len(argv):
        token = argv[i]
        if token in ("--freeze", "--no-patch"):
            own += argv[i:i + 2]
            i += 2
        elif token.startswith(("--freeze=", "--no-patch=")) or token in ("-h", "--help"):
            own.append(token)
            i += 1
        elif token == "-m":
            own += argv[i:i + 2]
            own.append("--")
            return [argv[0]] + own + argv[i + 2:]
        elif token.startswith("-m") and len(token) > 2:
            own += ["-m", token[2:], "--"]
            return [argv[0]] + own + argv[i + 1:]
        elif token == "--":
            i += 1
            break
        else:
            break
    return [argv[0]] + own + ["--"] + argv[i:]


def main(argv=None):
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        argv = _split_run_argv(argv)
    args = parser.parse_args(argv)
    if getattr(args, "target", None) and args.target[:1] == ["--"]:
        args.target = args.target[1:]
    if args.command == "run":
        return _run(args, parser)
    from . import check
    return check.main(as_json=args.json)
