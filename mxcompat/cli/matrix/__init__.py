"""``mxcompat matrix [options] -- COMMAND [ARGS...]``: run the user's own tests (or any command)
in one fresh environment per supported MXNet x Python x NumPy combination.

The combinations and their install lines are mxcompat's (``versions.COMBINATIONS``, the ones
its own tox matrix runs).  uv does the environment work: it finds the interpreters (pyenv's
too) and creates and fills the environments, which are cached between runs under a key made
of what was installed into them (the interpreter and the install lines); mxcompat and the
user's project are reinstalled into them on every run.  Exit status: 0 when every env that
ran passed, 1 when one failed (or could not be built, or with ``--strict`` lacked its
interpreter), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from ... import __version__, _envs
from ..._core import settings, versions
from .._usage import UsageError
from ._common import CACHE_ENV, ERROR, SKIPPED
from .display import LiveDisplay, PlainDisplay
from .report import _exit_code, table, write_junit
from .runner import Env, Packages, Runner, default_mxcompat_spec
from .select import select

USAGE = "mxcompat matrix [options] -- COMMAND [ARGS...]\n       mxcompat matrix --list [options]"
EPILOG = """The combinations (mxcompat matrix --list shows which this machine can run):
%s

Each env gets the MXNet/NumPy install lines shown by --list, then mxcompat and your project
(`pip install .` from the current directory), then runs COMMAND there, with the env's bin
directory first on PATH.  Under pytest, mxcompat's plugin applies the patches; for a script,
use `mxcompat run script.py` as the command.  Example:

  mxcompat matrix --with pytest --mxnet 1.5.1,1.9.1 -- pytest -q tests/
""" % "\n".join(
    "  %-28s MXNet %-12s Python %-5s %s" % (c.name, c.mxnet, c.python, c.numpy)
    for c in versions.COMBINATIONS
)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "matrix",
        help="run a command (your tests) in a fresh env per supported MXNet x "
        "Python x NumPy combination: mxcompat matrix --help",
        usage=USAGE,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run COMMAND in a fresh environment per supported MXNet x Python x NumPy "
        "combination, and say where it passes.",
    )
    sel = parser.add_argument_group("which combinations (all by default)")
    sel.add_argument(
        "--mxnet",
        metavar="VERSIONS",
        help="comma-separated MXNet releases, e.g. 1.5.1,1.9.1 (1.5 means every 1.5.x)",
    )
    sel.add_argument("--python", metavar="VERSIONS", help="comma-separated Pythons, e.g. 3.13")
    sel.add_argument(
        "--numpy",
        choices=("latest", "pinned"),
        help="latest: only the envs on the newest NumPy there is; pinned: the rest",
    )
    sel.add_argument(
        "--modern",
        action="store_true",
        help="only today's stack: Python 3.12+ (NumPy 1.26 and 2.x)",
    )
    sel.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="a combination by name (see --list); repeatable",
    )
    sel.add_argument(
        "--list",
        action="store_true",
        help="print the selected combinations, which of them this machine can "
        "run and why not the others, then exit",
    )
    sel.add_argument(
        "--strict",
        action="store_true",
        help="a combination whose Python is missing is an error, not a skip",
    )
    inst = parser.add_argument_group("what goes into each env")
    inst.add_argument(
        "--with",
        dest="with_",
        action="append",
        default=[],
        metavar="PKG",
        help="also install this requirement (e.g. pytest); repeatable",
    )
    inst.add_argument(
        "-r",
        "--requirements",
        action="append",
        default=[],
        metavar="FILE",
        help="also install the requirements in FILE; repeatable",
    )
    inst.add_argument(
        "--no-install-project",
        action="store_true",
        help="do not install the project in the current directory",
    )
    inst.add_argument(
        "--mxcompat",
        metavar="SPEC",
        help="what to install as mxcompat (a directory, a wheel or a "
        "requirement; default: this mxcompat's own source, else "
        "mxcompat==%s)" % __version__,
    )
    inst.add_argument(
        "--recreate", action="store_true", help="rebuild the cached envs instead of reusing them"
    )
    inst.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where envs are cached (default: $%s, else ~/.cache/mxcompat/matrix)" % CACHE_ENV,
    )
    inst.add_argument(
        "--download-pythons",
        action="store_true",
        help="let uv download an interpreter this machine lacks",
    )
    run = parser.add_argument_group("running")
    run.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="envs to run at once (default: half the cores, at least 1)",
    )
    run.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop COMMAND in an env after this long (then it failed)",
    )
    run.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    run.add_argument(
        "--junit", metavar="DIR", help="write one JUnit XML file per env into DIR (for CI)"
    )
    return parser


# --- main ------------------------------------------------------------------------------------


def _cache_dir(args):
    if args.cache_dir:
        return os.path.abspath(args.cache_dir)
    return settings.cache_folder("matrix", CACHE_ENV)


def _locate(uv, combos, download):
    found = {}
    envs = []
    for c in combos:
        if c.python not in found:
            python, why = _envs.find_python(uv, c.python, download)
            version = _envs.python_version(python) if python else None
            if python and version is None:
                python, why = None, "%s does not run" % python
            found[c.python] = (python, version, why)
        env = Env(c)
        env.python, env.python_version, why = found[c.python]
        if env.python is None:
            env.result, env.reason = SKIPPED, why
        envs.append(env)
    return envs


def _print_list(envs, out):
    width = max(len(e.name) for e in envs)
    for e in envs:
        c = e.combination
        where = (
            "Python %s at %s" % (e.python_version, e.python)
            if e.python
            else "cannot run here: %s" % e.reason
        )
        out.write(
            "%-*s  MXNet %-12s Python %-5s %-14s %s\n"
            % (width, e.name, c.mxnet, c.python, c.numpy, where)
        )
        for line in c.install_lines():
            out.write("%-*s    %s\n" % (width, "", line))


def split_argv(argv: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """``(matrix's own options, {"user_command": COMMAND [ARGS...]})``: everything after
    ``--`` is the command to run, never an option of matrix."""
    if "--" not in argv:
        return argv, {"user_command": []}
    at = argv.index("--")
    return argv[:at], {"user_command": argv[at + 1 :]}


def main(args: argparse.Namespace) -> int:
    out = sys.stdout
    command = args.user_command
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    # Not "> 0" alone: nan compares false both ways and would stop no command.
    if args.timeout is not None and not 0 < args.timeout < float("inf"):
        raise UsageError("--timeout must be a positive number of seconds, not %s" % args.timeout)
    combos = select(args)
    if not args.list and not command:
        raise UsageError(
            "name the command to run after --, e.g. mxcompat matrix -- pytest -q tests/"
        )
    project = os.getcwd()
    if not (
        args.list
        or args.no_install_project
        or any(os.path.exists(os.path.join(project, f)) for f in ("pyproject.toml", "setup.py"))
    ):
        raise UsageError(
            "no pyproject.toml or setup.py in %s to install: run from your "
            "project's folder or pass --no-install-project" % project
        )
    for req in args.requirements:
        if not os.path.exists(req):
            raise UsageError("-r %s: no such file" % req)
    uv = _envs.find_uv(required=False)
    if uv is None:
        raise UsageError("mxcompat matrix needs uv: pip install 'mxcompat[matrix]' (or uv)")

    envs = _locate(uv, combos, args.download_pythons)
    if args.list:
        _print_list(envs, out)
        return 0
    if args.strict and any(e.result == SKIPPED for e in envs):
        for e in envs:
            if e.result == SKIPPED:
                e.result = ERROR
                e.first_failure = e.reason
    cache = _cache_dir(args)
    os.makedirs(cache, exist_ok=True)
    jobs = args.jobs or max(1, (os.cpu_count() or 2) // 2)
    runnable = [e for e in envs if e.result is None]
    live = hasattr(out, "isatty") and out.isatty() and os.environ.get("TERM") != "dumb"
    display = (LiveDisplay if live else PlainDisplay)(envs, out)
    spec = args.mxcompat or default_mxcompat_spec()
    if spec and os.path.exists(spec):
        spec = os.path.abspath(spec)
    if not live:
        out.write(
            "mxcompat matrix: %d env(s), %d at a time, cache %s, mxcompat from %s\n"
            % (len(runnable), jobs, cache, spec)
        )
        for e in envs:
            if e.result is not None:
                display.update(e)
    os.makedirs(os.path.join(cache, "logs"), exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="mxcompat-matrix-")
    try:
        try:
            packages = Packages(
                uv,
                spec,
                None if args.no_install_project else project,
                workdir,
                os.path.join(cache, "logs", "build.log"),
            )
        except UsageError as exc:
            sys.stderr.write("mxcompat matrix: error: %s\n" % exc)
            return 1
        runner = Runner(uv, args, command, project, packages, cache, display)
        display.start()
        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                list(pool.map(runner.run, runnable))
        finally:
            display.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    out.write("\n" + table(envs) + "\n")
    code = _exit_code(envs, args.strict)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "command": command,
                    "project": project,
                    "mxcompat": spec,
                    "cache": cache,
                    "exit_code": code,
                    "envs": [e.as_json() for e in envs],
                },
                f,
                indent=2,
            )
            f.write("\n")
    if args.junit:
        write_junit(envs, args.junit)
    return code
