"""MXNet's own unittest folders as the judge of mxcompat on today's Python and NumPy.

A tool of the project, not a public command: ``python -m tools.mxnet_suite`` from a
checkout.  For each MXNet release of ``_core/versions`` (``--release 1.3.1,1.9.1`` or
``--release all``), the release's OWN test files (``tests/python/unittest`` of its tag in a git
directory of apache/mxnet, extracted into a temporary folder, never copied into this project)
run twice on this machine and the outcome of every test is compared by id:

* the reference: that release on the stack it was released for, without mxcompat (its
  versions row: 1.3/1.4 on Python 3.7 + NumPy 1.14.6; 1.5-1.8 on Python 3.8, where nose
  1.3.7 still runs, with their row's NumPy; 1.9.1 on Python 3.11 + NumPy 1.23.5);
* the candidate: Python 3.13 + the newest NumPy (``numpy>=2``, upgraded on every run) + the
  release (``--no-deps``) + mxcompat from this checkout, imported before pytest loads anything
  (``-p`` plugin), with pynose for the files' ``nose`` imports.

Usage (``docs/mxnet-suite.md``)::

    python -m tools.mxnet_suite --mxnet-src /path/to/mxnet.git [--release all]
        [--subset quick|required|others|full] [--files test_io,test_metric] [--json out.json]
    python -m tools.mxnet_suite --report a.json b.json   # the README's table of runs

``full`` is every test file of the tag: REQUIRED to their end, every other file within a time
budget (``--budget`` seconds per side; judged on the tests both sides finished).

``--mxnet-src`` (or ``MXCOMPAT_MXNET_SRC``) is a git directory of apache/mxnet (bare or not)
with the tags, or, for one release, a folder holding that release's ``tests/python``.  The
venvs are built with uv once (``mxcompat/_envs.py``) and cached under
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

from mxcompat import _envs
from mxcompat._core import settings

from .. import processes
from . import releases
from .plugins import _PLUGIN, _TEST_STANDINS
from .releases import DESELECT, QUICK, REQUIRED, SUBSETS  # noqa: F401
from .report import UNFINISHED, _passed, compare, markdown, merge, over_budget  # noqa: F401
from .stacks import (  # noqa: F401
    CACHE_ENV,
    SetupError,
    _run,
    _side_env,
    _versions,
    cache_dir,
    candidate_python,
    extract,
    reference_python,
)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_ENV = settings.MXNET_SRC


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


def run_file(
    python, run_dir, side, unittest, file, timeout, file_timeout, ids=None, tag="", budget=None
):
    """Run one test file (or only ``ids`` of it) on one side, ``{test id: record}``.

    A process that dies (a crash, a hang past the file's bound) is run again without the tests
    already done, the one it died in recorded as ``crashed``: one crash loses one test.  With a
    ``budget`` (seconds) the file stops when it is spent: the test it ended in is recorded as
    ``unfinished``, and the tests after it are not run."""
    side_dir = os.path.join(run_dir, side)
    record = os.path.join(side_dir, file + tag + ".jsonl")
    skip_path = os.path.join(side_dir, file + ".skip.json")
    done = {}
    deadline = time.time() + (budget or file_timeout)
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
        left = deadline - time.time()
        with open(os.path.join(side_dir, "%s%s.%d.log" % (file, tag, attempt)), "w") as log:
            rc, _ = processes.run(
                cmd, max(left, 1), cwd=unittest, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        if rc is None:
            rc = "timeout"
        started, got = _read_records(record)
        done.update(got)
        lost = [t for t in started if t not in done]
        if rc in (0, 1, 5) or not lost:
            break
        if budget and rc == "timeout":
            for t in lost:
                done[t] = {
                    "id": t,
                    "outcome": UNFINISHED,
                    "when": "call",
                    "message": "the file's time budget (%d s) ended in this test" % budget,
                }
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


def retry_flaky(python, run_dir, unittest, file, results, others, timeout):
    """Run once more, in a new process, the reference's failures that pass on the candidate
    (a timeout under load, a DataLoader worker's fork crash); a pass then is kept, marked
    ``flaky`` with the first outcome."""
    ids = [t for t, r in results.items() if not _passed(r) and _passed(others.get(t))]
    ids = [t for t in ids if results[t]["outcome"] not in ("skipped", "xfailed", UNFINISHED)]
    if not ids:
        return
    again = run_file(
        python, run_dir, "reference", unittest, file, timeout, timeout * 2, ids, ".retry"
    )
    for t in ids:
        r = again.get(t)
        if _passed(r):
            results[t] = dict(r, flaky=results[t]["outcome"] + ": " + results[t].get("message", ""))


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


def _standins(run_dir, files):
    """{"side file": "what"} of the stand-ins that served a test file (recorded as they did)."""
    out = {}
    for side in ("reference", "candidate"):
        for file in files:
            path = os.path.join(run_dir, side, file + ".jsonl.standins")
            if os.path.exists(path):
                with open(path) as f:
                    out["%s %s" % (side, file)] = ", ".join(sorted({x.strip() for x in f}))
    return out


def run_release(release, src, files, args, run_dir):
    """Compare one release's ``files`` (None: ``args.subset`` of its tag); its result as a
    dict (``report.row`` makes the README's line of it)."""
    start = time.time()
    allowed = releases.ALLOWED.get(release.tag, {})
    # Each side its own copy of the files: tests write into their folder (test_profiler's
    # profile.json), and the two sides run at once.
    trees = {
        side: extract(src, os.path.join(run_dir, "tree-" + side), release.tag)
        for side in ("reference", "candidate")
    }
    unittest = trees["reference"]
    if files is None:
        files = releases.files_of(unittest, args.subset, release.quick)
    present = [f for f in files if os.path.exists(os.path.join(unittest, f + ".py"))]
    if args.files:
        missing = sorted(set(files) - set(present))
        if missing:
            raise SetupError("not in tag %s's tests/python/unittest: %s" % (release.tag, missing))
    pythons = {
        "reference": reference_python(release),
        "candidate": candidate_python(release, args.candidate_python),
    }
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
                    run_file,
                    python,
                    run_dir,
                    side,
                    trees[side],
                    file,
                    args.timeout,
                    args.file_timeout,
                    # REQUIRED files run to their end; every other file within the budget.
                    budget=None if file in REQUIRED else args.budget,
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
    standins = _standins(run_dir, present)
    if standins:
        print(
            "stand-ins the test files (not MXNet) needed: %s"
            % "; ".join("%s: %s" % item for item in sorted(standins.items()))
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
    }


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tools.mxnet_suite",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--mxnet-src",
        default=settings.path(SRC_ENV),
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
    parser.add_argument(
        "--file-timeout", type=int, default=2400, help="seconds per REQUIRED file and side"
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=120,
        help="seconds per other file and side; a file judged on the tests both sides finished",
    )
    parser.add_argument(
        "--candidate-python",
        default=releases.CANDIDATE_PYTHON,
        help="the candidate's Python (default %(default)s; 3.14/3.15 run inside the Debian "
        "unstable root that .ci/newroot makes, the whole runner with them)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    parser.add_argument(
        "--report",
        nargs="+",
        metavar="JSON",
        help="run nothing: print the README table and the manual's sections of these runs' "
        "--json files (several runs of one release make one row)",
    )
    args = parser.parse_args(argv)
    if args.report:
        results = []
        for path in args.report:
            with open(path) as f:
                results += json.load(f)
        print(markdown(results), end="")
        return 0
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
            files = None
        run_dir = tempfile.mkdtemp(prefix="mxcompat-suite-%s-" % release.tag)
        try:
            result = run_release(release, args.mxnet_src, files, args, run_dir)
            results.append(result)
            status = max(status, 1 if result["regressions"] else 0)
        except (SetupError, _envs.EnvError, subprocess.TimeoutExpired) as e:
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
    print(markdown(results), end="")
    return status
