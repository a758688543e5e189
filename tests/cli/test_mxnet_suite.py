"""tests/mxnet_suite's verdict (the comparison of two sides' outcomes), on made-up records:
the real run needs apache/mxnet's git directory and takes minutes (README)."""

import json

import mxnet_suite


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


def test_numpy_changes_are_allowed_and_said_so():
    tid = sorted(mxnet_suite.NUMPY_CHANGES)[0]
    per_file = {
        tid.split(".py::")[0]: {
            "reference": {tid: _rec("passed")},
            "candidate": {tid: _rec("failed", "E")},
        }
    }
    lines, differences, regressions, _ = mxnet_suite.compare(per_file)
    assert regressions == [] and [d["numpy_change"] for d in differences] == [True]
    assert "[NumPy's change: %s]" % mxnet_suite.NUMPY_CHANGES[tid] in lines[-2]


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


def test_every_listed_id_names_a_file_of_the_run():
    files = set(mxnet_suite.FULL)
    for tid in list(mxnet_suite.DESELECT) + list(mxnet_suite.NUMPY_CHANGES):
        assert tid.split(".py::")[0] in files, tid
    assert set(mxnet_suite.QUICK) <= files
