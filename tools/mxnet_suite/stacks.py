"""The two sides' environments of the MXNet-suite runner (the reference: a release on its own
stack; the candidate: Python 3.13 + the newest NumPy + this checkout's mxcompat), and a
release's own test files extracted from a git directory of apache/mxnet."""

import os
import shutil
import subprocess

from mxcompat import _envs
from mxcompat._core import settings
from mxcompat.patches import exec_stack

from . import releases
from .plugins import _INI

CACHE_ENV = settings.TEST_CACHE


class SetupError(Exception):
    """The comparison cannot be run (the message says why)."""


def _run(cmd, what, timeout=1800):
    proc = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise SetupError(
            "%s failed (%d): %s\n%s" % (what, proc.returncode, " ".join(cmd), proc.stdout[-3000:])
        )
    return proc.stdout


def cache_dir():
    return os.path.join(settings.cache_folder("tests", CACHE_ENV), "suite")


# This checkout, whose mxcompat goes into the candidate (the tool runs from it).
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def reference_python(release):
    row = release.row
    name = "reference-mxnet-%s-py%s-%s" % (row.mxnet, release.reference_python, row.numpy)
    if release.reference_science != releases.SCIENCE:
        name += "-" + release.reference_science[0].replace("<", "-below-")
    steps = [
        ["--no-deps", "mxnet==" + row.mxnet],
        [row.numpy] + list(releases.MXNET_EXTRAS) + list(release.reference_tools),
        ["--only-binary", ":all:", row.numpy] + list(release.reference_science),
    ]
    return _envs.cached(cache_dir(), _envs.safe_name(name), release.reference_python, steps)


def candidate_python(release, python_version=releases.CANDIDATE_PYTHON):
    row = release.row
    name = "candidate-mxnet-%s-py%s-numpy-latest" % (row.mxnet, python_version)
    steps = [
        ["--no-deps", "mxnet==" + row.mxnet],
        [releases.CANDIDATE_NUMPY]
        + list(releases.MXNET_EXTRAS)
        + list(release.candidate_tools)
        + ["wrapt>=1.14", "looseversion>=1.3"],
        ["--only-binary", ":all:", releases.CANDIDATE_NUMPY]
        + [
            p
            for p in releases.SCIENCE
            if p not in releases.SCIENCE_WITHOUT_WHEELS.get(python_version, ())
        ],
    ]
    python = _envs.cached(cache_dir(), _envs.safe_name(name), python_version, steps)
    uv = _envs.find_uv()
    # The newest NumPy on every run (a new one must show here first), then this checkout's
    # mxcompat over whatever the cache holds.
    _run(
        [uv, "pip", "install", "-q", "--python", python, "--upgrade", releases.CANDIDATE_NUMPY],
        "upgrading NumPy in the candidate",
    )
    _run(
        [
            uv,
            "pip",
            "install",
            "-q",
            "--python",
            python,
            "--no-deps",
            "--reinstall",
            CHECKOUT,
        ],
        "installing mxcompat into the candidate",
    )
    return python


def extract(src, dest, tag):
    """Tag ``tag``'s tests/python (unittest, common, train) into ``dest``; the unittest path."""
    src = os.path.abspath(os.path.expanduser(src))
    os.makedirs(dest, exist_ok=True)
    if os.path.isdir(os.path.join(src, "tests", "python", "unittest")) and not os.path.exists(
        os.path.join(src, "objects")
    ):
        shutil.copytree(os.path.join(src, "tests", "python"), os.path.join(dest, "tests", "python"))
    else:
        git = (
            ["git", "--git-dir", src]
            if os.path.isdir(os.path.join(src, "objects"))
            else ["git", "-C", src]
        )
        listed = _run(
            git + ["ls-tree", "--name-only", tag, "tests/python/"],
            "reading tag %s of %s" % (tag, src),
        ).split()
        paths = [
            p
            for p in ("tests/python/unittest", "tests/python/common", "tests/python/train")
            if p in listed
        ]
        archive = os.path.join(dest, "tests.tar")
        _run(
            git + ["archive", "-o", archive, tag] + paths, "extracting tag %s from %s" % (tag, src)
        )
        _run(["tar", "-xf", archive, "-C", dest], "unpacking " + archive)
        os.unlink(archive)
    unittest = os.path.join(dest, "tests", "python", "unittest")
    with open(os.path.join(unittest, "pytest.ini"), "w") as f:
        f.write(_INI)
    return unittest


def _versions(python):
    code = (
        "import sys\n"
        "try:\n    import importlib.metadata as m\n"
        "except ImportError:\n    import importlib_metadata as m\n"
        "out = [sys.version.split()[0]]\n"
        "for d in ('numpy', 'mxnet', 'scipy', 'pytest', 'nose', 'pynose', 'mxcompat'):\n"
        "    try:\n        out.append('%s %s' % (d, m.version(d)))\n"
        "    except Exception:\n        pass\n"
        "print(*out)"
    )
    try:
        # Not in the checkout: its mxcompat folder would be found from the cwd.
        return subprocess.run(
            [python, "-c", code], stdout=subprocess.PIPE, cwd="/", text=True, timeout=120
        ).stdout.strip()
    except subprocess.TimeoutExpired:
        return "?"


def _side_env(run_dir, side, file):
    env = settings.environ_without_ours()
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    env.update(
        {
            "PYTHONPATH": os.path.join(run_dir, side),
            "SUITE_RECORD": os.path.join(run_dir, side, file + ".jsonl"),
            "SUITE_SKIP_IDS": os.path.join(run_dir, side, file + ".skip.json"),
            # Two shared cores: one OpenMP thread per process.
            "OMP_NUM_THREADS": "1",
            "MXNET_SUBGRAPH_VERBOSE": "0",
            # The same random numbers on both sides (common.with_seed reads these).
            "MXNET_TEST_SEED": "1234",
            "MXNET_MODULE_SEED": "1234",
            "MXNET_HOME": os.path.join(run_dir, side, "mxnet_home"),
            "PY_COLORS": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    if side == "reference":
        # MXNet as released: glibc's own switch where it refuses 1.3-1.6's executable stack
        # (the candidate gets mxcompat's fix).
        env = exec_stack.without_mxcompat(env)
    return env
