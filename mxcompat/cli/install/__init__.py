"""``mxcompat install mxnet==1.9.1``: MXNet, with the NumPy that mxcompat's table
(``_core/versions.py``) pairs with it on the running Python, in one command.

Every MXNet wheel pins ``numpy<2`` (1.3.1/1.4.1: ``numpy<1.15``), so on Python 3.13-3.15 pip
alone cannot install MXNet beside a NumPy that has wheels there.  This runs the table's install
lines for this interpreter: with pip, MXNet with ``--no-deps`` and then NumPy and MXNet's other
requirements; with ``--uv``, one ``uv pip install`` whose ``--overrides`` replaces the pin.  A
release the table has no line for on this Python is refused with the Pythons it has.

A CUDA wheel (``mxnet-cu117==1.9.1``) is installed on the same lines, then the
``nvidia-*-cu11`` packages its ``libmxnet.so`` needs (``cuda.py``).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from typing import IO

from ... import _envs
from ..._core import versions
from .._usage import UsageError
from . import cuda

# The overrides file shipped beside this module for the release a newcomer installs, so that
# `uv pip install . mxnet==1.9.1 --overrides <it>` works from a checkout before mxcompat is
# installed (tests check it against versions.overrides).
SHIPPED_OVERRIDES = {"1.9.1": "mxnet-1.9.1-overrides.txt"}


def shipped_overrides_path(mxnet: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), SHIPPED_OVERRIDES[mxnet])


def overrides_text(mxnet: str) -> str:
    """The content of the shipped overrides file for ``mxnet``."""
    return (
        "# uv pip install ... --overrides THIS-FILE: MXNet %s's NumPy pin replaced by the NumPy\n"
        "# mxcompat is tested with on each Python (generated from mxcompat/_core/versions.py).\n"
        % mxnet
        + "\n".join(versions.overrides(mxnet))
        + "\n"
    )


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "install",
        help="install MXNet with the NumPy mxcompat is tested with on this Python (past the "
        "wheel's numpy<2 pin on Python 3.12-3.15): mxcompat install mxnet==1.9.1",
        description="Install MXNet into this Python's environment with the NumPy mxcompat is "
        "tested with here (on Python 3.12-3.15 past the wheel's numpy<2 pin).  Then: "
        "mxcompat check.",
    )
    parser.add_argument(
        "mxnet",
        nargs="?",
        default="mxnet",
        metavar="mxnet==VERSION",
        help="the release (mxnet==1.9.1, or 1.9.1; 1.5.1 means 1.5.1.post0), or a CUDA 11 wheel "
        "(mxnet-cu117==1.9.1: with the nvidia-*-cu11 packages its libmxnet.so needs); default: "
        "the newest the table has for this Python",
    )
    parser.add_argument(
        "--numpy",
        choices=("pinned", "latest"),
        default="pinned",
        help="the table's pinned NumPy (default) or the newest NumPy (where the table tests it)",
    )
    parser.add_argument(
        "--uv",
        action="store_true",
        help="install with uv (one `uv pip install --overrides`), e.g. in a venv uv made, "
        "which has no pip",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the install commands, run nothing"
    )
    return parser


def choose(spec: str, python: str, latest: bool = False) -> versions.Combination:
    """The table's combination for the release ``spec`` names on Python ``python`` (``"3.13"``)."""
    wanted = spec.strip()
    if wanted.lower().startswith("mxnet"):
        wanted = wanted[len("mxnet") :].strip()
        if wanted and not wanted.startswith("=="):
            raise UsageError("%r: name one release, as mxnet==1.9.1" % spec)
        wanted = wanted[2:].strip()
    table = versions.COMBINATIONS
    if wanted and not any(versions.release_matches(wanted, c.mxnet) for c in table):
        raise UsageError(
            "no MXNet %s in mxcompat's table (it has %s)"
            % (wanted, ", ".join(sorted(set(c.mxnet for c in table))))
        )
    rows = [c for c in table if not wanted or versions.release_matches(wanted, c.mxnet)]
    here = [c for c in rows if c.python == python]
    # Rows on MXNet's own pins, on a newer Python than this one.
    own = [
        c for c in rows if not c.no_deps and versions.Version(python) < versions.Version(c.python)
    ]
    if not here and own:
        # Between the table's Pythons (3.8-3.10): MXNet's own requirements, as pip resolves
        # them, which mxcompat does not test but which are what MXNet itself asks for.  A
        # Python newer than every row on those pins is refused (3.13 for 1.6.0, whose rows are
        # 3.11 and 3.14+): its NumPy<2 would be built from source.
        newest = max((c.mxnet for c in own), key=versions.Version)
        return versions.Combination(None, newest, python, versions.wheel_numpy(newest), False)
    if not here:
        raise UsageError(
            "MXNet %s has no tested install on Python %s; mxcompat's table has it on Python %s"
            % (
                wanted or "(any release)",
                python,
                ", ".join(sorted(set(c.python for c in rows), key=versions.Version)),
            )
        )
    newest = max((c.mxnet for c in here), key=versions.Version)
    here = [c for c in here if c.mxnet == newest]
    matching = [c for c in here if c.latest == latest]
    if not matching:
        raise UsageError(
            "MXNet %s on Python %s is tested with %s only, not the newest NumPy"
            % (newest, python, here[0].numpy)
        )
    return matching[0]


def commands(
    combination: versions.Combination, python: str, uv: str | None, overrides: str
) -> list[list[str]]:
    """The install commands for ``combination`` into the environment of interpreter ``python``:
    pip's (one per install step), or uv's one with ``overrides`` as its overrides file."""
    if uv is not None:
        return [
            [uv, "pip", "install", "--python", python, "mxnet==" + combination.mxnet]
            + ["--overrides", overrides]
        ]
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check"]
    return [pip + step for step in combination.install_steps()]


def main(args: argparse.Namespace) -> int:
    here = "%d.%d" % sys.version_info[:2]
    cuda_name = None
    try:
        wheel, spec = cuda.split_spec(args.mxnet)
        found = cuda.variant(wheel) if wheel else None
        combination = choose(spec, here, latest=args.numpy == "latest")
        if found is not None:
            cuda_name = found[0]
            cuda.refuse_old_cuda(cuda_name, found[1], combination.mxnet)
        uv = None
        if args.uv:
            uv = _envs.find_uv(required=False)
            if uv is None:
                raise UsageError("--uv: uv is not installed (pip install uv)")
        elif not args.dry_run and not _has_pip():
            raise UsageError(
                "this environment has no pip (uv makes venvs without one): "
                "mxcompat install --uv %s, or python -m ensurepip first" % args.mxnet
            )
    except UsageError as exc:
        sys.stderr.write("mxcompat install: %s\n" % exc)
        return 2
    out = sys.stdout
    out.write(
        "mxcompat install: MXNet %s with %s on Python %s (%s)\n"
        % (
            combination.mxnet,
            combination.numpy,
            platform.python_version(),
            "mxcompat's " + combination.name
            if combination.name
            else "MXNet's own requirements: mxcompat's table has no line for this Python",
        )
    )
    with tempfile.TemporaryDirectory(prefix="mxcompat-install-") as tmp:
        overrides = os.path.join(tmp, "overrides.txt")
        with open(overrides, "w") as f:
            f.write(combination.numpy + "\n")
        steps = commands(combination, sys.executable, uv, overrides)
        for command in cuda.renamed(steps, cuda_name) if cuda_name else steps:
            out.write("+ %s\n" % " ".join(shlex.quote(a) for a in command))
            out.flush()
            if args.dry_run:
                continue
            rc = subprocess.call(command)
            if rc != 0:
                sys.stderr.write("mxcompat install: that command failed (exit %d)\n" % rc)
                return rc
    if cuda_name is not None:
        rc = _cuda_libraries(args, uv, out)
        if rc != 0:
            return rc
    if args.dry_run:
        return 0
    if combination.no_deps:
        # Said once here, so that pip's complaint is not read as a broken install.
        out.write(
            "`pip check` will say mxnet %s requires %s: expected; mxcompat is what makes it run "
            "on %s.\n"
            % (combination.mxnet, versions.wheel_numpy(combination.mxnet), combination.numpy)
        )
    if cuda_name is not None:
        # Last but one: the one file written outside pip's and uv's records.
        cuda.plain_import(out)
    out.write("Now: mxcompat check (and `import mxcompat` before `import mxnet`)\n")
    return 0


def _cuda_libraries(args: argparse.Namespace, uv: str | None, out: IO[str]) -> int:
    """The nvidia-*-cu11 packages the installed libmxnet.so names, installed."""
    from ...cuda import libs
    from ...cuda import plain_import as pth

    if args.dry_run:
        out.write("+ then the nvidia-*-cu11 packages its libmxnet.so needs (DT_NEEDED)\n")
        out.write("+ then %s beside mxnet: a plain `import mxnet` loads them too\n" % pth.NAME)
        return 0
    library = cuda.installed_library(sys.executable)
    wanted = libs.requirements(library) if library else []
    if not wanted:
        sys.stderr.write("mxcompat install: no CUDA library named by %s\n" % library)
        return 1
    if uv is not None:
        command = [uv, "pip", "install", "--python", sys.executable] + wanted
    else:
        command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"] + wanted
    out.write("+ %s\n" % " ".join(shlex.quote(a) for a in command))
    out.flush()
    rc = subprocess.call(command)
    if rc != 0:
        sys.stderr.write("mxcompat install: that command failed (exit %d)\n" % rc)
        return rc
    if libs.DRIVER in libs.cuda_needed(library) and not libs.system_has(libs.DRIVER):
        from ...cuda import stub

        try:
            made = stub.build(library)
        except OSError as exc:
            out.write(
                "No NVIDIA driver here (no %s), and no stand-in could be built (%s): "
                "import mxnet will fail until a driver is installed.\n" % (libs.DRIVER, exc)
            )
        else:
            out.write(
                "No NVIDIA driver here: mxcompat built a no-device %s (%s), so MXNet imports "
                "and runs on mx.cpu(); a driver installed later takes its place.\n"
                % (libs.DRIVER, made)
            )
    return 0


def _has_pip() -> bool:
    import importlib.util

    return importlib.util.find_spec("pip") is not None
