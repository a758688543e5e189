"""Section ``suite``: MXNet 1.9.1's own Module, Gluon and Trainer test files (its
``tests/python/unittest``, from a git directory of apache/mxnet: ``--mxnet-src`` or
``MXCOMPAT_MXNET_SRC``), run by pytest in this interpreter without mxcompat (``-p
no:mxcompat``: its plugin is what imports it) and with it (installed, as a user has it),
one fresh process per run, alternated A B B A.  The ratio of the wall times is the cost of
mxcompat on a real test suite.  Skipped, with the reason, without a source or without pytest
and nose (MXNet's tests import it) in this environment.  Not part of ``--quick`` unless a
source is given; then it runs the two smaller files once per side.

The test outcomes of both sides are printed (they run the same tests; MXNet's own failures on
this stack are the same on both).  `python -m tools.mxnet_suite` judges the
outcomes, not this."""

import importlib.util
import shutil
import subprocess
import sys
import tempfile

from mxcompat._core import settings
from tools import pytest_summary

from ._harness import interleave

SRC_ENV = settings.MXNET_SRC
# Module, Trainer, Gluon: about two minutes per run on two cores (test_gluon is most of it).
FILES = ("test_module", "test_gluon_trainer", "test_gluon")
QUICK_FILES = ("test_module", "test_gluon_trainer")
SIDES = {"without mxcompat": ["-p", "no:mxcompat"], "with mxcompat": []}


def _missing():
    need = [m for m in ("pytest", "nose") if importlib.util.find_spec(m) is None]
    if need:
        return (
            "needs %s in this environment (MXNet's tests import nose: pip install pytest "
            "pynose)" % " and ".join(need)
        )
    if importlib.util.find_spec("mxcompat.pytest_plugin") is None:
        return "mxcompat is not installed here (its pytest plugin is what loads it)"
    return None


def _env():
    # mxcompat's own switches stay out (a stray MXCOMPAT_FREEZE would change the tests);
    # both sides draw the same random numbers (MXNet's common.with_seed reads these).
    env = settings.environ_without_ours()
    env.update(
        {
            "MXNET_TEST_SEED": "1234",
            "MXNET_MODULE_SEED": "1234",
            "MXNET_SUBGRAPH_VERBOSE": "0",
            "PY_COLORS": "0",
        }
    )
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run(table, configs, reps, source=None, quick=False):
    source = source or settings.path(SRC_ENV)
    if not source:
        print(
            "suite: skipped (no MXNet source: --mxnet-src or $%s names a git directory of "
            "apache/mxnet with tag 1.9.1, whose Module/Gluon/Trainer tests are timed with "
            "and without mxcompat)" % SRC_ENV
        )
        return
    missing = _missing()
    if missing:
        print("suite: skipped (%s)" % missing)
        return
    # The MXNet-suite runner's extraction of a tag's unittest folder.
    from tools.mxnet_suite import extract

    files = QUICK_FILES if quick else FILES
    rounds = 1 if quick else 2
    workdir = tempfile.mkdtemp(prefix="mxcompat-bench-suite-")
    summaries = {}
    try:
        unittest = extract(source, workdir, "1.9.1")

        def side(name):
            def run_pytest():
                cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
                out = subprocess.run(
                    cmd + SIDES[name] + [f + ".py" for f in files],
                    cwd=unittest,
                    env=_env(),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=3600,
                ).stdout
                summaries[name] = pytest_summary.summary(out) or out.strip()[-300:]

            return run_pytest

        times = interleave({name: side(name) for name in SIDES}, rounds, warmup=0)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for name in SIDES:
        print("suite: %s: %s" % (name, summaries.get(name)))
    table.add(
        "MXNet 1.9.1's own tests (%s), fresh pytest each" % ", ".join(files),
        "without mxcompat",
        times["without mxcompat"],
        "with mxcompat",
        times["with mxcompat"],
        "<= 1.03x",
    )
