"""The MXNet-suite runner's verdict (the comparison of two sides' outcomes) on made-up records,
and its per-release plan; the real run needs apache/mxnet's git directory and takes minutes
(docs/mxnet-suite.md)."""

import json
import os
import re
import subprocess
import sys

import pytest

from mxcompat._core import settings, versions
from tools import mxnet_suite
from tools.mxnet_suite import releases, report


def _rec(outcome, message=""):
    return {"outcome": outcome, "message": message}


def test_a_reference_pass_failing_on_the_candidate_is_a_regression():
    per_file = {
        "test_x": {
            "reference": {
                "test_x.py::a": _rec("passed"),
                "test_x.py::b": _rec("passed"),
                "test_x.py::c": _rec("failed", "E1"),
                "test_x.py::d": _rec("passed"),
            },
            "candidate": {
                "test_x.py::a": _rec("passed"),
                "test_x.py::b": _rec("failed", "E2"),
                "test_x.py::c": _rec("failed", "E1"),
                "test_x.py::d": _rec("skipped"),
            },
        }
    }
    lines, differences, regressions, totals = mxnet_suite.compare(per_file)
    assert regressions == ["test_x.py::b", "test_x.py::d"]
    assert totals == {"reference": [3, 1, 0], "candidate": [1, 2, 1]}
    assert "  test_x.py::b: passed -> failed" in lines
    assert "      candidate: E2" in lines


def test_numpy_changes_are_allowed_per_release_and_said_so():
    allowed = releases.ALLOWED["1.9.1"]
    tid = sorted(allowed)[0]
    per_file = {
        tid.split(".py::")[0]: {
            "reference": {tid: _rec("passed")},
            "candidate": {tid: _rec("failed", "E")},
        }
    }
    lines, differences, regressions, _ = mxnet_suite.compare(per_file, allowed)
    assert regressions == [] and [d["numpy_change"] for d in differences] == [True]
    assert "[NumPy's change: %s]" % (allowed[tid],) in lines[-2]
    # Allowed for one release is no licence for another.
    other = {t: r for t, r in releases.ALLOWED["1.3.1"].items() if t != tid}
    assert mxnet_suite.compare(per_file, other)[2] == [tid]


def test_a_flaky_reference_failure_is_reported_as_flaky():
    per_file = {
        "test_x": {
            "reference": {"test_x.py::a": dict(_rec("passed"), flaky="crashed: died")},
            "candidate": {"test_x.py::a": _rec("passed")},
        }
    }
    lines, differences, regressions, _ = mxnet_suite.compare(per_file)
    assert differences == [] and regressions == []
    assert "  test_x.py::a: first crashed: died" in lines


def test_every_release_of_the_versions_table_and_its_reference_stack():
    rows = {c.mxnet: c for c in versions.COMBINATIONS if c.name.startswith("mx")}
    assert sorted(r.row.mxnet for r in releases.RELEASES) == sorted(rows)
    assert [r.tag for r in releases.RELEASES] == [
        "1.3.1",
        "1.4.1",
        "1.5.1",
        "1.6.0",
        "1.7.0",
        "1.8.0",
        "1.9.1",
    ]
    stacks = {r.tag: (r.reference_python, r.row.numpy) for r in releases.RELEASES}
    assert stacks["1.3.1"] == stacks["1.4.1"] == ("3.7", "numpy==1.14.6")
    for tag in ("1.5.1", "1.6.0", "1.7.0", "1.8.0"):
        # nose 1.3.7 (the files' test tool) runs on Python <= 3.9.
        assert stacks[tag] == ("3.8", "numpy==1.23.5"), tag
    assert stacks["1.9.1"] == ("3.11", "numpy==1.23.5")
    assert releases.by_tag("1.7.0.post2").tag == "1.7.0"


def test_records_survive_a_crash(tmpdir):
    # A process killed mid-line leaves a cut last line; the test it was in has only "started".
    path = tmpdir.join("r.jsonl")
    path.write(
        json.dumps({"id": "t.py::a", "outcome": "started"})
        + "\n"
        + json.dumps({"id": "t.py::a", "outcome": "passed", "message": ""})
        + "\n"
        + json.dumps({"id": "t.py::b", "outcome": "started"})
        + "\n"
        + '{"id": "t.py::'
    )
    started, done = mxnet_suite._read_records(str(path))
    assert started == ["t.py::a", "t.py::b"] and list(done) == ["t.py::a"]


def test_every_listed_id_is_a_pytest_id_of_a_release():
    allowed = [(tag, t) for tag, ids in releases.ALLOWED.items() for t in ids]
    for tid in list(releases.DESELECT) + [t for _, t in allowed]:
        # A test's id, or a file's (its collection error).
        assert re.match(r"test_\w+\.py(::\w+(::\w+)?)?$", tid), tid
    tags = {r.tag for r in releases.RELEASES}
    assert {tag for tag, _ in allowed} == tags
    for release in releases.RELEASES:
        assert set(release.quick) <= set(releases.REQUIRED) | {"test_numpy_ndarray"}


def test_a_subset_is_the_files_of_the_tag(tmp_path):
    for name in ("test_zeta", "test_module", "test_alpha", "test_metric", "common"):
        (tmp_path / (name + ".py")).write_text("")
    (tmp_path / "test_data.txt").write_text("")
    assert releases.files_of(str(tmp_path), "full") == [
        "test_module",
        "test_metric",
        "test_alpha",
        "test_zeta",
    ]
    assert releases.files_of(str(tmp_path), "required") == ["test_module", "test_metric"]
    assert releases.files_of(str(tmp_path), "others") == ["test_alpha", "test_zeta"]
    # The quick subset: those of its files the tag has.
    assert releases.files_of(str(tmp_path), "quick") == ["test_metric", "test_module"]


def test_a_file_cut_by_its_budget_is_judged_on_the_tests_both_sides_finished():
    per_file = {
        "test_x": {
            "reference": {
                "test_x.py::a": _rec("passed"),
                "test_x.py::b": _rec("passed"),
                "test_x.py::c": _rec("unfinished"),
            },
            "candidate": {
                "test_x.py::a": _rec("passed"),
                "test_x.py::b": _rec("unfinished"),
            },
        },
        "test_y": {
            "reference": {"test_y.py::a": _rec("passed"), "test_y.py::b": _rec("passed")},
            "candidate": {"test_y.py::a": _rec("passed")},
        },
    }
    lines, differences, regressions, totals = mxnet_suite.compare(per_file)
    # test_x: only a is judged; test_y ran to its end, so b missing on the candidate counts.
    assert regressions == ["test_y.py::b"]
    assert totals == {"reference": [3, 0, 0], "candidate": [2, 0, 0]}
    assert lines[2].endswith("1/0/0  (budget ended)")
    assert report.over_budget(per_file) == {"test_x": 1}


SIDES = ("reference", "candidate")


def _result(tag, per_file, seconds):
    return {
        "release": tag,
        "files": list(per_file),
        "per_file": per_file,
        "versions": {"reference": "3.8 r", "candidate": "3.13 c"},
        "elapsed_s": seconds,
        "standins": [],
    }


def test_several_runs_of_a_release_make_one_row():
    acc = "test_metric.py::test_acc"
    first = _result(
        "1.3.1",
        {
            "test_metric": {
                "reference": {acc: _rec("passed"), "test_metric.py::b": _rec("passed")},
                "candidate": {acc: _rec("failed", "E"), "test_metric.py::b": _rec("passed")},
            },
            "test_io": {
                "reference": {"test_io.py::a": _rec("failed", "old")},
                "candidate": {"test_io.py::a": _rec("failed", "old")},
            },
        },
        100,
    )
    # A later run of test_io replaces the first one's; test_random is added.
    second = _result(
        "1.3.1",
        {
            "test_io": {
                "reference": {"test_io.py::a": _rec("passed")},
                "candidate": {"test_io.py::a": _rec("passed")},
            },
            "test_random": {
                "reference": {"test_random.py::a": _rec("failed", "F")},
                "candidate": {"test_random.py::a": _rec("passed")},
            },
        },
        200,
    )
    (merged,) = report.merge([first, second])
    assert list(merged["per_file"]) == ["test_metric", "test_io", "test_random"]
    assert report.row(merged) == (
        "| 1.3.1 | 3 | 3 / 4 · 3 / 4 | NEP 50: `test_acc` (test_metric.py:55) "
        "| `test_random.py::a` failed → passed | 5 min |"
    )
    text = report.markdown([first, second])
    assert text.startswith(report.ROW_HEAD + "\n| 1.3.1 | 3 |")
    assert "- passed/failed/skipped: reference 3/1/0, candidate 3/1/0; 300 s in 2 run(s)" in text


def test_a_run_on_another_candidate_python_is_a_row_of_its_own():
    records = {"test_io": {side: {"test_io.py::a": _rec("passed")} for side in SIDES}}
    on_313 = _result("1.9.1", records, 60)
    on_314 = dict(
        _result("1.9.1", records, 120),
        versions={"reference": "3.11.7 r", "candidate": "3.14.10 numpy 2.5.5"},
    )
    rows = [report.row(r) for r in report.merge([on_314, on_313])]
    assert rows == [
        "| 1.9.1 | 1 | 1 / 1 · 1 / 1 | none | none | 1 min |",
        "| 1.9.1 on Python 3.14 | 1 | 1 / 1 · 1 / 1 | none | none | 2 min |",
    ]
    assert "### MXNet 1.9.1 on Python 3.14" in report.markdown([on_314])


def test_each_allowed_difference_names_its_test_line():
    for tag, ids in releases.ALLOWED.items():
        for tid, allowed in ids.items():
            file, line = allowed.line.split(":")
            assert file == tid.split("::")[0] and int(line) > 0, (tag, tid)
            assert str(allowed).startswith(allowed.change + ": the test's own " + allowed.line)


@pytest.mark.skipif(
    not settings.path(settings.MXNET_SRC),
    reason="needs a git directory of apache/mxnet in $%s" % mxnet_suite.SRC_ENV,
)
def test_each_release_gets_its_own_files(tmp_path):
    # The 1.3.1 files are not the 1.9.1 files: each tag's own unittest folder is extracted.
    src = settings.path(settings.MXNET_SRC)
    old = mxnet_suite.extract(src, str(tmp_path / "a"), "1.3.1")
    new = mxnet_suite.extract(src, str(tmp_path / "b"), "1.9.1")
    assert os.path.exists(os.path.join(new, "test_contrib_svrg_module.py"))
    assert not os.path.exists(os.path.join(old, "test_contrib_svrg_module.py"))
    with open(os.path.join(old, "test_metric.py")) as f:
        assert "expected_acc = (np.argmax(pred, axis=1) == label).sum().asscalar()" in f.read()


@pytest.mark.skipif(
    not settings.path(settings.MXNET_SRC),
    reason="needs a git directory of apache/mxnet in $%s" % mxnet_suite.SRC_ENV,
)
def test_each_allowed_line_is_in_its_tag_and_each_deselected_file_in_a_tag():
    src = settings.path(settings.MXNET_SRC)
    files = set()
    for release in releases.RELEASES:
        listing = subprocess.run(
            ["git", "-C", src, "ls-tree", "--name-only", release.tag + ":tests/python/unittest"],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        ).stdout.split()
        files.update(listing)
        for tid, allowed in releases.ALLOWED[release.tag].items():
            file, line = allowed.line.split(":")
            text = subprocess.run(
                ["git", "-C", src, "show", "%s:tests/python/unittest/%s" % (release.tag, file)],
                stdout=subprocess.PIPE,
                text=True,
                check=True,
            ).stdout.splitlines()[int(line) - 1]
            assert allowed.code.strip("`").replace("(...)", "") in text, (release.tag, tid, text)
    for tid in releases.DESELECT:
        assert tid.split("::")[0] in files, tid


def _one_file_run(tmp_path, name, text):
    """A unittest folder holding one test file, and a run folder with the reference's plugin."""
    unittest = tmp_path / "unittest"
    unittest.mkdir()
    (unittest / (name + ".py")).write_text(text)
    run_dir = str(tmp_path / "run")
    mxnet_suite._write_plugins(run_dir, ["reference"])
    path = os.path.join(run_dir, "reference", "_suite_plugin.py")
    with open(path) as f:
        plugin = f.read()
    # This env has mxcompat; the plugin's guard that the reference never sees it is not the
    # subject here.
    with open(path, "w") as f:
        f.write(plugin.replace("assert importlib.util.find_spec('mxcompat') is None", ""))
    return unittest, run_dir


def test_a_crash_loses_one_test_and_the_file_resumes_in_a_new_process(tmp_path):
    # The real runner on a real pytest: the second test kills its process (as a SIGFPE in
    # MXNet's C++ code would); the third still runs, in the next process.
    pytest.importorskip("pytest_timeout")
    unittest, run_dir = _one_file_run(
        tmp_path,
        "test_crash",
        "import os\n\n"
        "def test_a():\n    pass\n\n"
        "def test_b():\n    os._exit(3)\n\n"
        "def test_c():\n    assert 1 == 2\n\n"
        "def test_d():\n    pass\n",
    )
    got = mxnet_suite.run_file(
        sys.executable, run_dir, "reference", str(unittest), "test_crash", 60, 300
    )
    outcomes = {t.split("::")[1]: r["outcome"] for t, r in got.items()}
    assert outcomes == {
        "test_a": "passed",
        "test_b": "crashed",
        "test_c": "failed",
        "test_d": "passed",
    }
    assert (
        got["test_crash.py::test_b"]["message"] == "the process died (exit status 3) in this test"
    )


def test_a_file_stops_when_its_budget_is_spent(tmp_path):
    pytest.importorskip("pytest_timeout")
    unittest, run_dir = _one_file_run(
        tmp_path,
        "test_slow",
        "import time\n\n"
        "def test_a():\n    pass\n\n"
        "def test_b():\n    time.sleep(60)\n\n"
        "def test_c():\n    pass\n",
    )
    got = mxnet_suite.run_file(
        sys.executable, run_dir, "reference", str(unittest), "test_slow", 120, 300, budget=8
    )
    # test_b is where the budget ended; test_c is not run (no new process for it).
    assert {t.split("::")[1]: r["outcome"] for t, r in got.items()} == {
        "test_a": "passed",
        "test_b": "unfinished",
    }
    assert got["test_slow.py::test_b"]["message"] == (
        "the file's time budget (8 s) ended in this test"
    )


def test_a_failure_of_the_references_own_stack_is_said_so_in_the_row():
    tid = sorted(releases.REFERENCE_STACK["1.9.1"])[0]
    file = tid.split(".py::")[0]
    result = _result(
        "1.9.1",
        {
            file: {
                "reference": {
                    tid: _rec("failed", "ValueError: sums"),
                    file + ".py::x": _rec("passed"),
                },
                "candidate": {tid: _rec("passed"), file + ".py::x": _rec("failed", "E")},
            }
        },
        60,
    )
    row = report.row(result)
    cause = releases.REFERENCE_STACK["1.9.1"][tid][0]
    assert row.endswith(
        "| none | `%s.py::x` passed → failed; 1 that fail on the reference's own stack pass "
        "here (%s) | 1 min |" % (file, cause)
    )
    assert "(fails on the reference's own stack: %s)" % releases.REFERENCE_STACK["1.9.1"][tid][
        1
    ] in report.section(result)
    # The same outcome on another release is an unexplained difference.
    other = dict(result, release="1.8.0")
    assert "`%s` failed → passed" % tid in report.row(other)


def test_a_row_names_six_other_differences_and_counts_the_rest():
    ids = ["test_x.py::t%d" % i for i in range(8)]
    result = _result(
        "1.5.1",
        {
            "test_x": {
                "reference": {t: _rec("passed") for t in ids},
                "candidate": {t: _rec("failed", "E") for t in ids},
            }
        },
        0,
    )
    cell = report.row(result).split(" | ")[-2]
    assert cell == "; ".join(
        ["`%s` passed → failed" % t for t in ids[:6]] + ["and 2 more (the manual's section)"]
    )
    assert all("- differs: `%s` passed → failed" % t in report.section(result) for t in ids)


def test_an_id_deselected_after_a_run_is_left_out_of_its_report():
    tid = "test_gluon_model_zoo.py::test_models"
    assert tid in releases.DESELECT
    result = _result(
        "1.5.1",
        {
            "test_gluon_model_zoo": {
                "reference": {
                    tid: _rec("failed", "ConnectionError"),
                    "test_gluon_model_zoo.py::x": _rec("passed"),
                },
                "candidate": {
                    tid: _rec("failed", "ConnectionError"),
                    "test_gluon_model_zoo.py::x": _rec("passed"),
                },
            }
        },
        0,
    )
    (merged,) = report.merge([result])
    assert report.row(merged).startswith("| 1.5.1 | 1 | 1 / 1 · 1 / 1 | none | none |")
    assert "failing the same way on both sides: none" in report.section(merged)
