"""MXNet's own unittest folders as the judge of mxcompat on today's Python and NumPy.

A tool of the project, not a public command: ``python -m mxcompat.cli.mxnet_suite``.  For each
MXNet release of ``_core/versions`` (``--release 1.3.1,1.9.1`` or ``--release all``), the
release's OWN test files (``tests/python/unittest`` of its tag in a git directory of
apache/mxnet, extracted into a temporary folder, never copied into this project) run twice on
this machine and the outcome of every test is compared by id:

* the reference: that release on the stack it was released for, without mxcompat (its
  versions row: 1.3/1.4 on Python 3.7 + NumPy 1.14.6; 1.5-1.8 on Python 3.8, where nose
  1.3.7 still runs, with their row's NumPy; 1.9.1 on Python 3.11 + NumPy 1.23.5);
* the candidate: Python 3.13 + the newest NumPy (``numpy>=2``, upgraded on every run) + the
  release (``--no-deps``) + mxcompat from this checkout, imported before pytest loads anything
  (``-p`` plugin), with pynose for the files' ``nose`` imports.

Usage (``docs/mxnet-suite.md``)::

    python -m mxcompat.cli.mxnet_suite --mxnet-src /path/to/mxnet.git [--release all]
        [--subset quick|full] [--files test_io,test_metric] [--json out.json]

``--mxnet-src`` (or ``MXCOMPAT_MXNET_SRC``) is a git directory of apache/mxnet (bare or not)
with the tags, or, for one release, a folder holding that release's ``tests/python``.  The
venvs are built with uv once (``mxcompat/cli/envs.py``) and cached under
``MXCOMPAT_TEST_CACHE``; delete them to rebuild.  Exit status: 0 when every test that passes
on a release's reference passes on its candidate (except that release's allowed NumPy
changes), 1 when one does not, 2 when the run could not be made.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .. import envs
from . import releases
from .releases import DESELECT, FULL, QUICK  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_ENV = "MXCOMPAT_MXNET_SRC"
CACHE_ENV = "MXCOMPAT_TEST_CACHE"
SUBSETS = ("quick", "full")

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
        with open(os.environ["SUITE_RECORD"] + ".deselected", "a") as f:
            f.write("".join(i.nodeid + "\n" for i in gone))


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
# Written by mxcompat.cli.mxnet_suite: MXNet's markers, so they raise no warning.
markers =
    seed: MXNet's seed marker
    serial: MXNet's serial marker
    remote_required: MXNet's network marker
    gpu: MXNet's GPU marker
    integration: MXNet's integration marker
    garbage_expected: MXNet's leak marker
"""


# A stand-in the test FILES need on Python 3.12+, never MXNet: test_ndarray.py (every release)
# does `from distutils.version import LooseVersion` after `import mxnet`.  It serves only an
# import made by a test file (the folder pytest runs in), and only when no other finder
# (mxcompat's, for MXNet 1.6+'s own import of distutils) has the module; the run says where
# it served.
_TEST_STANDINS = r"""
import importlib.abc, importlib.machinery, sys, types

_TESTS = os.getcwd()


class _TestFilesDistutils(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name not in ("distutils", "distutils.version"):
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1:]:
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                return spec
        frame = sys._getframe(1)
        while frame is not None and (
            frame.f_code.co_filename.startswith("<") or "importlib" in frame.f_code.co_filename
        ):
            frame = frame.f_back
        if frame is None or os.path.dirname(os.path.abspath(frame.f_code.co_filename)) != _TESTS:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=name == "distutils")

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        if spec.name == "distutils":
            module.__path__ = []
        else:
            from looseversion import LooseVersion
            module.LooseVersion = LooseVersion
            with open(os.environ["SUITE_RECORD"] + ".standins", "a") as f:
                f.write("distutils.version\n")
        return module

    def exec_module(self, module):
        pass


sys.meta_path.append(_TestFilesDistutils())
"""


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
    return os.path.join(
        os.environ.get(CACHE_ENV)
        or os.path.join(os.path.expanduser("~"), ".cache", "mxcompat-tests"),
        "suite",
    )


def _mxcompat_source():
    """This checkout (the tool runs from it: tests/ and the source are not in a wheel)."""
    from ..matrix.envs import default_mxcompat_spec

    return default_mxcompat_spec()


def reference_python(release):
    row = release.row
    name = "reference-mxnet-%s-py%s-%s" % (row.mxnet, release.reference_python, row.numpy)
    steps = [
        ["--no-deps", "mxnet==" + row.mxnet],
        [row.numpy] + list(releases.MXNET_EXTRAS) + list(release.reference_tools),
        ["--only-binary", ":all:", row.numpy] + list(releases.SCIENCE),
    ]
    return envs.cached(cache_dir(), envs.safe_name(name), release.reference_python, steps)


def candidate_python(release):
    row = release.row
    name = "candidate-mxnet-%s-py%s-numpy-latest" % (row.mxnet, releases.CANDIDATE_PYTHON)
    steps = [
        ["--no-deps", "mxnet==" + row.mxnet],
        [releases.CANDIDATE_NUMPY]
        + list(releases.MXNET_EXTRAS)
        + list(release.candidate_tools)
        + ["wrapt>=1.14", "looseversion>=1.3"],
        ["--only-binary", ":all:", releases.CANDIDATE_NUMPY] + list(releases.SCIENCE),
    ]
    python = envs.cached(cache_dir(), envs.safe_name(name), releases.CANDIDATE_PYTHON, steps)
    uv = envs.find_uv()
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
            _mxcompat_source(),
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
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MXCOMPAT_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
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


def run_file(python, run_dir, side, unittest, file, timeout, file_timeout, ids=None, tag=""):
    """Run one test file (or only ``ids`` of it) on one side, ``{test id: record}``.

    A process that dies (a crash, a hang past the file's bound) is run again without the tests
    already done, the one it died in recorded as ``crashed``: one crash loses one test."""
    side_dir = os.path.join(run_dir, side)
    record = os.path.join(side_dir, file + tag + ".jsonl")
    skip_path = os.path.join(side_dir, file + ".skip.json")
    done = {}
    deadline = time.time() + file_timeout
    env = _side_env(run_dir, side, file)
    env["SUITE_RECORD"] = record
    for attempt in range(50):
        with open(skip_path, "w") as f:
            json.dump(sorted(set(DESELECT) | set(done)), f)
        targets = [i for i in ids if i not in done] if ids else [file + ".py"]
        if not targets:
            break
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
        ] + targets
        log = open(os.path.join(side_dir, "%s%s.%d.log" % (file, tag, attempt)), "w")
        left = deadline - time.time()
        proc = subprocess.Popen(
            cmd,
            cwd=unittest,
            env=env,
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
                % ("past the file's time bound" if rc == "timeout" else "exit status %s" % rc),
            }
        if time.time() > deadline:
            break
    return done


def _passed(record):
    return record is not None and record["outcome"] in ("passed", "xpassed")


def retry_flaky(python, run_dir, unittest, file, results, others, timeout):
    """Run once more, in a new process, the reference's failures that pass on the candidate
    (a timeout under load, a DataLoader worker's fork crash); a pass then is kept, marked
    ``flaky`` with the first outcome."""
    ids = [t for t, r in results.items() if not _passed(r) and _passed(others.get(t))]
    ids = [t for t in ids if results[t]["outcome"] not in ("skipped", "xfailed")]
    if not ids:
        return
    again = run_file(
        python, run_dir, "reference", unittest, file, timeout, timeout * 2, ids, ".retry"
    )
    for t in ids:
        r = again.get(t)
        if _passed(r):
            results[t] = dict(r, flaky=results[t]["outcome"] + ": " + results[t].get("message", ""))


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


def compare(per_file, allowed=None):
    """Lines of the comparison, the differences and the regressions (a reference pass that is
    no pass on the candidate, unless ``allowed`` {id: reason} lists it), and the totals."""
    allowed = allowed or {}
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
            differences.append(
                {
                    "id": tid,
                    "reference": a,
                    "candidate": b,
                    "regression": regression,
                    "numpy_change": tid in allowed,
                }
            )
            if regression and tid not in allowed:
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
            tag = " [NumPy's change: %s]" % allowed[d["id"]] if d["numpy_change"] else ""
            lines.append(
                "  %s: %s -> %s%s"
                % (d["id"], d["reference"]["outcome"], d["candidate"]["outcome"], tag)
            )
            for side in ("reference", "candidate"):
                msg = d[side].get("message")
                if msg and d[side]["outcome"] != "passed":
                    lines.append("      %s: %s" % (side, msg))
    flaky = [
        (tid, r["flaky"])
        for sides in per_file.values()
        for tid, r in sorted(sides["reference"].items())
        if r.get("flaky")
    ]
    if flaky:
        lines += ["", "flaky on the reference (failed, then passed when run again):"]
        lines += ["  %s: first %s" % f for f in flaky]
    return lines, differences, regressions, totals


def _write_plugins(run_dir, pythons):
    for side in pythons:
        os.makedirs(os.path.join(run_dir, side), exist_ok=True)
        # The reference must never see mxcompat (it would judge itself).
        first = (
            "import mxcompat\n" + _TEST_STANDINS
            if side == "candidate"
            else ("import importlib.util\nassert importlib.util.find_spec('mxcompat') is None")
        )
        with open(os.path.join(run_dir, side, "_suite_plugin.py"), "w") as f:
            f.write(_PLUGIN % {"first": first})


def _deselected(run_dir, files):
    """The ids the plugins left out of the files' runs (network ids, and ids already done)."""
    ids = set()
    for side in ("reference", "candidate"):
        for file in files:
            path = os.path.join(run_dir, side, file + ".jsonl.deselected")
            if os.path.exists(path):
                with open(path) as f:
                    ids.update(line.strip() for line in f if line.strip())
    return ids


def run_release(release, src, files, args, run_dir):
    """Compare one release; its result as a dict (``row`` is the README's line)."""
    start = time.time()
    allowed = releases.ALLOWED.get(release.tag, {})
    unittest = extract(src, run_dir, release.tag)
    present = [f for f in files if os.path.exists(os.path.join(unittest, f + ".py"))]
    if args.files:
        missing = sorted(set(files) - set(present))
        if missing:
            raise SetupError("not in tag %s's tests/python/unittest: %s" % (release.tag, missing))
    pythons = {"reference": reference_python(release), "candidate": candidate_python(release)}
    _write_plugins(run_dir, pythons)
    versions = {s: _versions(p) for s, p in pythons.items()}
    print(
        "MXNet %s's own tests (%s), %d files"
        % (release.tag, args.files or args.subset, len(present))
    )
    for side in pythons:
        print("  %-9s: Python %s" % (side, versions[side]))
    sys.stdout.flush()
    per_file = {}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        for file in present:
            t0 = time.time()
            futures = {
                side: pool.submit(
                    run_file, python, run_dir, side, unittest, file, args.timeout, args.file_timeout
                )
                for side, python in pythons.items()
            }
            per_file[file] = {side: f.result() for side, f in futures.items()}
            retry_flaky(
                pythons["reference"],
                run_dir,
                unittest,
                file,
                per_file[file]["reference"],
                per_file[file]["candidate"],
                args.timeout,
            )
            print("  ran %-24s %4.0f s" % (file, time.time() - t0))
            sys.stdout.flush()
    lines, differences, regressions, totals = compare(per_file, allowed)
    print()
    print("\n".join(lines))
    print()
    deselected = sorted(set(DESELECT) & _deselected(run_dir, present))
    if deselected:
        print("not run (network):")
        for tid in deselected:
            print("  %s: %s" % (tid, DESELECT[tid]))
    standins = sorted(
        f
        for f in present
        if os.path.exists(os.path.join(run_dir, "candidate", f + ".jsonl.standins"))
    )
    if standins:
        print(
            "stand-in for the test files' own `from distutils.version import LooseVersion` "
            "(looseversion; nothing else served distutils): %s" % ", ".join(standins)
        )
    elapsed = time.time() - start
    used = sorted(d["id"] for d in differences if d["numpy_change"])
    print(
        "MXNet %s: %.0f s; %d deselected (network); %d tests differ, %d allowed as "
        "NumPy's own change, %d regressions"
        % (release.tag, elapsed, len(deselected), len(differences), len(used), len(regressions))
    )
    print()
    sys.stdout.flush()
    n = sum(len(s["reference"]) for s in per_file.values())
    return {
        "release": release.tag,
        "files": present,
        "per_file": per_file,
        "totals": totals,
        "differences": differences,
        "regressions": regressions,
        "allowed_used": used,
        "versions": versions,
        "elapsed_s": round(elapsed),
        "standins": standins,
        "row": "| %s | %d | %d / %d | %d / %d | %s | %d min |"
        % (
            release.tag,
            len(present),
            totals["reference"][0],
            n,
            totals["candidate"][0],
            sum(len(s["candidate"]) for s in per_file.values()),
            ", ".join("`%s`" % t for t in used) or "none",
            round(elapsed / 60),
        ),
    }


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m mxcompat.cli.mxnet_suite",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--mxnet-src",
        default=os.environ.get(SRC_ENV),
        help="git directory of apache/mxnet (or a folder with tests/python of one "
        "release); default $%s" % SRC_ENV,
    )
    parser.add_argument(
        "--release",
        default="1.9.1",
        help="comma-separated releases (%s) or `all`; default 1.9.1"
        % ", ".join(r.tag for r in releases.RELEASES),
    )
    parser.add_argument("--subset", choices=SUBSETS, default="full")
    parser.add_argument("--files", help="comma-separated test files instead of a subset")
    parser.add_argument("--json", help="write every outcome of both sides here")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test")
    parser.add_argument("--file-timeout", type=int, default=2400, help="seconds per file and side")
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    args = parser.parse_args(argv)
    if not args.mxnet_src:
        parser.error("no --mxnet-src and no $%s" % SRC_ENV)
    try:
        chosen = (
            list(releases.RELEASES)
            if args.release == "all"
            else [releases.by_tag(t.strip()) for t in args.release.split(",")]
        )
    except KeyError as e:
        parser.error("no release %s (known: %s)" % (e, ", ".join(r.tag for r in releases.RELEASES)))
    results, status = [], 0
    for release in chosen:
        if args.files:
            files = [f[:-3] if f.endswith(".py") else f for f in args.files.split(",")]
        else:
            files = list(release.quick if args.subset == "quick" else FULL)
        run_dir = tempfile.mkdtemp(prefix="mxcompat-suite-%s-" % release.tag)
        try:
            result = run_release(release, args.mxnet_src, files, args, run_dir)
            results.append(result)
            status = max(status, 1 if result["regressions"] else 0)
        except (SetupError, envs.EnvError, subprocess.TimeoutExpired) as e:
            print("mxnet_suite: MXNet %s: %s" % (release.tag, e))
            results.append({"release": release.tag, "error": str(e)})
            status = 2
        finally:
            if args.keep:
                print("run folder kept: %s" % run_dir)
            else:
                shutil.rmtree(run_dir, ignore_errors=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    print("release | files | reference passed / run | candidate passed / run | allowed | time")
    for r in results:
        print(r.get("row") or "| %s | could not be run: %s |" % (r["release"], r["error"][:200]))
    return status
