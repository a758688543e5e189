"""MXNet's own unittest folder as the judge of mxcompat on today's NumPy.

Runs the same test files of MXNet 1.9.1 (``tests/python/unittest`` of tag ``1.9.1`` in a git
directory of apache/mxnet, extracted into a temporary folder, never copied into this project)
twice on this machine, and compares the outcome of every test:

* the reference: Python 3.11 + NumPy 1.23.5 + mxnet 1.9.1, without mxcompat (the stack
  MXNet was released for);
* the candidate: Python 3.13 + the newest NumPy (``numpy>=2``, upgraded on every run) +
  mxnet 1.9.1 (``--no-deps``) + mxcompat from this checkout, imported before pytest loads
  anything (``-p`` plugin).

Usage (``README``, "MXNet's own tests")::

    python -m tests.mxnet_suite --mxnet-src /path/to/mxnet.git [--subset quick|full]
                                [--json out.json] [--files test_io,test_metric]

``--mxnet-src`` (or ``MXCOMPAT_MXNET_SRC``) is a git directory of apache/mxnet (bare or
not) that has the tag, or a folder holding ``tests/python`` of 1.9.1.  The two virtualenvs are
built with uv once and cached under ``MXCOMPAT_TEST_CACHE`` (``tests/support/reference_env.py``);
delete them to rebuild.  Exit status: 0 when every test that passes on the reference passes
on the candidate (except ``NUMPY_CHANGES``), 1 when one does not, 2 when the run could not
be made.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from support import reference_env  # noqa: E402  (tests/ is not a package)

SRC_ENV = "MXCOMPAT_MXNET_SRC"
TAG = "1.9.1"
MXNET_WHEEL = "mxnet==1.9.1"

# The files of MXNet's suite that exercise what mxcompat patches.  `quick` is what .ci/run runs
# (a few minutes on two cores).
FULL = (
    "test_ndarray",
    "test_numpy_ndarray",
    "test_numpy_gluon",
    "test_io",
    "test_metric",
    "test_optimizer",
    "test_kvstore",
    "test_symbol",
    "test_loss",
    "test_autograd",
    "test_gluon_data",
    "test_random",
    "test_recordio",
    "test_init",
    "test_sparse_ndarray",
    "test_gluon_rnn",
    "test_rnn",
    "test_gluon_contrib",
    "test_infer_shape",
    "test_gluon_utils",
    "test_gluon_estimator",
    "test_executor",
    "test_image",
    "test_gluon_data_vision",
    "test_engine",
    "test_exc_handling",
    "test_higher_order_grad",
    "test_gluon_save",
    "test_module",
    "test_gluon",
    "test_gluon_trainer",
)
QUICK = ("test_ndarray", "test_numpy_ndarray", "test_metric", "test_io", "test_gluon_trainer")
SUBSETS = {"quick": QUICK, "full": FULL}

# Tests that need the network (no host but the package registries is reachable here): they
# fail on both sides, so they are not run.  Exact pytest ids.
_DATA = "downloads MXNet's test data (%s), and no host but the package registries is reachable"
DESELECT = {
    "test_gluon_data.py::test_recordimage_dataset": _DATA % "test_images.tar.gz",
    "test_gluon_data.py::test_recordimage_dataset_with_data_loader_multiworker": _DATA
    % "test_images.tar.gz",
    "test_gluon_data.py::test_image_folder_dataset": _DATA % "test_images.tar.gz",
    "test_gluon_data.py::test_datasets": _DATA % "MNIST, CIFAR, Fashion-MNIST",
    "test_io.py::test_MNISTIter": _DATA % "mnist.zip",
    "test_io.py::test_Cifar10Rec": _DATA % "cifar10.zip",
    "test_io.py::test_image_iter_exception": _DATA % "cifar10.zip",
    "test_io.py::test_ImageRecordIter_seed_augmentation": _DATA % "cifar10.zip",
    "test_io.py::test_LibSVMIter": _DATA % "news20.t.bz2",
    "test_gluon_contrib.py::test_datasets": _DATA % "WikiText-2",
    "test_gluon_estimator.py::test_initializer": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_symbol_block": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_export": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_import": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_save_load": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_hybrid_static_memory": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_hybrid_static_memory_switching": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_hybrid_static_memory_recording": _DATA % "a model-zoo ResNet",
}
# TestImage's images come from its nose-style setupClass, which downloads them (and which
# pytest does not call): these fail on both sides for want of the images.
for _name in ("test_det_augmenters", "test_image_detiter", "test_imageiter"):
    DESELECT["test_image.py::TestImage::" + _name] = _DATA % (
        "test_images.tar.gz, in TestImage.setupClass"
    )

# Tests whose outcome differs because NumPy itself changed what users see (documented in
# NumPy's release notes), not because MXNet's Python layer breaks: allowed to differ, each
# with its reason (README, "MXNet's own tests").
NUMPY_CHANGES = {
    "test_metric.py::test_acc": "NEP 50 (NumPy 2.0): the test's own expected value np.float32(2) / 3 stays float32 "  # noqa: E501
    "(NumPy 1: float64); MXNet's accuracy is 0.6666666666666666 on both sides",
    "test_numpy_ndarray.py::test_np_ndarray_indexing": "NumPy 2.4 refuses to store an array of ndim > 0 into one element (deprecated in "  # noqa: E501
    "1.25): the test's own np_array[(1, 2, 3, 4)] = value.asnumpy() with a (1, 1) value",
}

# Test tools: the same versions on both sides.  SciPy, h5py and OpenCV (used by some tests)
# are resolved against each side's NumPy, so they differ; the run prints what each side got.
TOOLS = (
    "pytest==9.2.0",
    "pytest-timeout==2.4.0",
    "pynose==1.5.5",
    "mock==5.2.0",
    "requests<3",
    "graphviz==0.8.4",
)
SCIENCE = ("scipy", "h5py", "opencv-python-headless")

REFERENCE_PYTHON = reference_env.REFERENCE_PYTHON
REFERENCE_NUMPY = reference_env.REFERENCE_NUMPY
CANDIDATE_PYTHON = "3.13"
CANDIDATE_NUMPY = "numpy>=2"

# The pytest plugin each side loads with -p: reports every test as it ends (a crash of the
# process, e.g. a SIGFPE, loses nothing but the test that crashed) and leaves out the ids of
# SUITE_SKIP_IDS.  Written into the run folder; the candidate's also imports mxcompat first.
_PLUGIN = r"""
import json, os
%(first)s
_out = open(os.environ["SUITE_RECORD"], "a")
_skip = set(json.load(open(os.environ["SUITE_SKIP_IDS"])))


def _write(**kw):
    _out.write(json.dumps(kw) + "\n")
    _out.flush()


def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if i.nodeid not in _skip]
    gone = [i for i in items if i.nodeid in _skip]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = kept


def pytest_collectreport(report):
    if report.failed:
        _write(id=report.nodeid, outcome="error", when="collect",
               message=_first_line(report))


def pytest_runtest_logstart(nodeid, location):
    _write(id=nodeid, outcome="started")


def _first_line(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    if isinstance(report.longrepr, tuple):   # a skip: (path, line, reason)
        text = str(report.longrepr[2])
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0][:300] if lines else ""


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        if report.skipped and hasattr(report, "wasxfail"):
            outcome = "xfailed"
        elif report.passed and hasattr(report, "wasxfail"):
            outcome = "xpassed"
        elif report.when != "call" and report.failed:
            outcome = "error"
        else:
            outcome = report.outcome
        _write(id=report.nodeid, outcome=outcome, when=report.when,
               message="" if outcome == "passed" else _first_line(report))
"""

_INI = """[pytest]
# Written by mxcompat's tests/mxnet_suite: MXNet's markers, so they raise no warning.
markers =
    seed: MXNet's seed marker
    serial: MXNet's serial marker
    remote_required: MXNet's network marker
    gpu: MXNet's GPU marker
    integration: MXNet's integration marker
    garbage_expected: MXNet's leak marker
"""


class SetupError(Exception):
    """The comparison cannot be run (the message says why)."""


def _uv():
    for path in (shutil.which("uv"), os.path.join(ROOT, ".ci", ".venv", "bin", "uv")):
        if path and os.path.exists(path):
            return path
    raise SetupError(
        "uv not found: put it on PATH (pip install uv) or run `bash .ci/run` "
        "once (it installs tox-uv into .ci/.venv)"
    )


def _run(cmd, what, timeout=1800):
    proc = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise SetupError(
            "%s failed (%d): %s\n%s" % (what, proc.returncode, " ".join(cmd), proc.stdout[-3000:])
        )
    return proc.stdout


def _venv(name, python_version, packages):
    """A cached uv virtualenv with ``packages`` (lists installed in turn), its Python."""
    base = reference_env.find_python(python_version)
    if base is None:
        raise SetupError("no python%s on PATH or under pyenv" % python_version)
    uv = _uv()

    def build(root):
        _run([uv, "venv", "-q", "--python", base, root], "creating " + name)
        python = os.path.join(root, "bin", "python")
        for args in packages:
            _run(
                [uv, "pip", "install", "-q", "--python", python] + list(args),
                "installing %s into %s" % (" ".join(args), name),
            )

    return reference_env.cached_venv(name, build)


def reference_python():
    return _venv(
        "suite-reference-py%s-numpy-%s" % (REFERENCE_PYTHON, REFERENCE_NUMPY),
        REFERENCE_PYTHON,
        [["--no-deps", MXNET_WHEEL], ["numpy==" + REFERENCE_NUMPY] + list(TOOLS) + list(SCIENCE)],
    )


def candidate_python():
    python = _venv(
        "suite-candidate-py%s-numpy-latest" % CANDIDATE_PYTHON,
        CANDIDATE_PYTHON,
        [
            ["--no-deps", MXNET_WHEEL],
            [CANDIDATE_NUMPY] + list(TOOLS) + list(SCIENCE) + ["wrapt>=1.14", "looseversion>=1.3"],
        ],
    )
    uv = _uv()
    # The newest NumPy on every run (a new one must show here first), then this checkout's
    # mxcompat over whatever the cache holds.
    _run(
        [uv, "pip", "install", "-q", "--python", python, "--upgrade", CANDIDATE_NUMPY],
        "upgrading NumPy in the candidate",
    )
    _run(
        [uv, "pip", "install", "-q", "--python", python, "--no-deps", "--reinstall", ROOT],
        "installing mxcompat into the candidate",
    )
    return python


def extract(src, dest):
    """MXNet 1.9.1's tests/python (unittest, common, train) into ``dest``; the unittest path."""
    src = os.path.abspath(os.path.expanduser(src))
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
        archive = os.path.join(dest, "tests.tar")
        _run(
            git
            + [
                "archive",
                "-o",
                archive,
                TAG,
                "tests/python/unittest",
                "tests/python/common",
                "tests/python/train",
            ],
            "extracting tag %s from %s" % (TAG, src),
        )
        _run(["tar", "-xf", archive, "-C", dest], "unpacking " + archive)
        os.unlink(archive)
    unittest = os.path.join(dest, "tests", "python", "unittest")
    with open(os.path.join(unittest, "pytest.ini"), "w") as f:
        f.write(_INI)
    return unittest


def _versions(python):
    code = (
        "import sys, importlib.metadata as m\n"
        "print(sys.version.split()[0], *['%s %s' % (d, m.version(d)) for d in "
        "('numpy', 'mxnet', 'scipy', 'pytest', 'mxcompat') "
        "if __import__('importlib.util').util.find_spec(d.replace('-', '_')) or d == 'mxnet'])"
    )
    try:
        # Not in the checkout: its mxcompat folder would be found from the cwd.
        return subprocess.run(
            [python, "-c", code], stdout=subprocess.PIPE, cwd=HERE, text=True, timeout=120
        ).stdout.strip()
    except subprocess.TimeoutExpired:
        return "?"


def _side_env(run_dir, side, file):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MXCOMPAT_") and k not in ("PYTHONPATH", "PYTHONHOME")
    }
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
    return env


def _read_records(path):
    started, done = [], {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash
                if r["outcome"] == "started":
                    started.append(r["id"])
                else:
                    done[r["id"]] = r
    return started, done


def run_file(python, run_dir, side, unittest, file, timeout, file_timeout):
    """Run one test file on one side; a process that dies (a crash, the time bound) is run
    again without the tests already done, the one that died recorded as ``crashed``."""
    side_dir = os.path.join(run_dir, side)
    record = os.path.join(side_dir, file + ".jsonl")
    skip_path = os.path.join(side_dir, file + ".skip.json")
    done = {}
    deadline = time.time() + file_timeout
    for attempt in range(20):
        with open(skip_path, "w") as f:
            json.dump(sorted(set(DESELECT) | set(done)), f)
        cmd = [
            python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "_suite_plugin",
            "-q",
            "-rN",
            "--timeout=%d" % timeout,
            "--timeout-method=signal",
            "--rootdir",
            unittest,
            "--junitxml",
            os.path.join(side_dir, "%s.%d.xml" % (file, attempt)),
            file + ".py",
        ]
        log = open(os.path.join(side_dir, "%s.%d.log" % (file, attempt)), "w")
        left = deadline - time.time()
        proc = subprocess.Popen(
            cmd,
            cwd=unittest,
            env=_side_env(run_dir, side, file),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            rc = "timeout"
        log.close()
        started, got = _read_records(record)
        done.update(got)
        lost = [t for t in started if t not in done]
        if rc in (0, 1, 5) or not lost:
            break
        for t in lost:
            done[t] = {
                "id": t,
                "outcome": "crashed",
                "when": "call",
                "message": "the process died (%s) in this test"
                % ("time bound" if rc == "timeout" else "exit status %s" % rc),
            }
        if rc == "timeout" or time.time() > deadline:
            break
    return done


def _summary(results):
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for r in results.values():
        o = r["outcome"]
        key = (
            "passed"
            if o in ("passed", "xpassed")
            else "skipped"
            if o in ("skipped", "xfailed")
            else "failed"
        )
        counts[key] += 1
    return counts


def compare(per_file):
    """Lines of the comparison and the list of regressions (not allowed by NUMPY_CHANGES)."""
    lines, differences, regressions = [], [], []
    head = "%-26s %22s   %22s" % ("file", "reference p/f/s", "candidate p/f/s")
    lines += [head, "-" * len(head)]
    totals = {"reference": [0, 0, 0], "candidate": [0, 0, 0]}
    for file, sides in per_file.items():
        cells = []
        for side in ("reference", "candidate"):
            c = _summary(sides[side])
            for i, k in enumerate(("passed", "failed", "skipped")):
                totals[side][i] += c[k]
            cells.append("%d/%d/%d" % (c["passed"], c["failed"], c["skipped"]))
        lines.append("%-26s %22s   %22s" % (file, cells[0], cells[1]))
        ref, cand = sides["reference"], sides["candidate"]
        for tid in sorted(set(ref) | set(cand)):
            a = ref.get(tid, {"outcome": "absent", "message": ""})
            b = cand.get(tid, {"outcome": "absent", "message": ""})
            if a["outcome"] == b["outcome"]:
                continue
            regression = a["outcome"] == "passed" and b["outcome"] != "passed"
            allowed = tid in NUMPY_CHANGES
            differences.append(
                {
                    "id": tid,
                    "reference": a,
                    "candidate": b,
                    "regression": regression,
                    "numpy_change": allowed,
                }
            )
            if regression and not allowed:
                regressions.append(tid)
    lines.append(
        "%-26s %22s   %22s"
        % (
            "total",
            "/".join(map(str, totals["reference"])),
            "/".join(map(str, totals["candidate"])),
        )
    )
    if differences:
        lines += ["", "tests whose outcome differs (reference -> candidate):"]
        for d in differences:
            tag = " [NumPy's change: %s]" % NUMPY_CHANGES[d["id"]] if d["numpy_change"] else ""
            lines.append(
                "  %s: %s -> %s%s"
                % (d["id"], d["reference"]["outcome"], d["candidate"]["outcome"], tag)
            )
            for side in ("reference", "candidate"):
                msg = d[side].get("message")
                if msg and d[side]["outcome"] != "passed":
                    lines.append("      %s: %s" % (side, msg))
    return lines, differences, regressions, totals


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tests.mxnet_suite",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--mxnet-src",
        default=os.environ.get(SRC_ENV),
        help="git directory of apache/mxnet (or a folder with tests/python of "
        "1.9.1); default $%s" % SRC_ENV,
    )
    parser.add_argument("--subset", choices=sorted(SUBSETS), default="full")
    parser.add_argument("--files", help="comma-separated test files instead of a subset")
    parser.add_argument("--json", help="write every outcome of both sides here")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test")
    parser.add_argument("--file-timeout", type=int, default=2400, help="seconds per file and side")
    parser.add_argument("--keep", action="store_true", help="keep the run folder")
    args = parser.parse_args(argv)
    if not args.mxnet_src:
        parser.error("no --mxnet-src and no $%s" % SRC_ENV)
    files = args.files.split(",") if args.files else SUBSETS[args.subset]
    files = [f[:-3] if f.endswith(".py") else f for f in files]

    run_dir = tempfile.mkdtemp(prefix="mxcompat-suite-")
    start = time.time()
    try:
        unittest = extract(args.mxnet_src, run_dir)
        pythons = {"reference": reference_python(), "candidate": candidate_python()}
        for side in pythons:
            os.makedirs(os.path.join(run_dir, side))
            # The reference must never see mxcompat (it would judge itself).
            first = (
                "import mxcompat"
                if side == "candidate"
                else ("import importlib.util\nassert importlib.util.find_spec('mxcompat') is None")
            )
            with open(os.path.join(run_dir, side, "_suite_plugin.py"), "w") as f:
                f.write(_PLUGIN % {"first": first})
        print("MXNet %s's own tests (%s), %d files" % (TAG, args.files or args.subset, len(files)))
        for side, python in pythons.items():
            print("  %-9s: Python %s" % (side, _versions(python)))
        sys.stdout.flush()
        per_file = {}
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:
            for file in files:
                if not os.path.exists(os.path.join(unittest, file + ".py")):
                    raise SetupError("%s.py is not in tag %s's tests/python/unittest" % (file, TAG))
                t0 = time.time()
                futures = {
                    side: pool.submit(
                        run_file,
                        python,
                        run_dir,
                        side,
                        unittest,
                        file,
                        args.timeout,
                        args.file_timeout,
                    )
                    for side, python in pythons.items()
                }
                per_file[file] = {side: f.result() for side, f in futures.items()}
                print("  ran %-24s %4.0f s" % (file, time.time() - t0))
                sys.stdout.flush()
        lines, differences, regressions, totals = compare(per_file)
        print()
        print("\n".join(lines))
        print()
        deselected = sorted(t for t in DESELECT if t.split(".py::")[0] in files)
        if deselected:
            print("not run (network):")
            for tid in deselected:
                print("  %s: %s" % (tid, DESELECT[tid]))
        print(
            "elapsed: %.0f s; %d deselected (network); %d tests differ, %d allowed as "
            "NumPy's own change, %d regressions"
            % (
                time.time() - start,
                len(deselected),
                len(differences),
                sum(d["numpy_change"] for d in differences),
                len(regressions),
            )
        )
        if args.json:
            with open(args.json, "w") as f:
                json.dump(
                    {
                        "files": files,
                        "per_file": per_file,
                        "totals": totals,
                        "differences": differences,
                        "regressions": regressions,
                        "versions": {s: _versions(p) for s, p in pythons.items()},
                    },
                    f,
                    indent=1,
                )
        return 1 if regressions else 0
    except (SetupError, subprocess.TimeoutExpired, reference_env.Unavailable) as e:
        print("mxnet_suite: %s" % e)
        return 2
    finally:
        if args.keep:
            print("run folder kept: %s" % run_dir)
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
