"""The way out to PyTorch on the models MXNet users trained: each GluonCV / GluonNLP model of
tests/support/zoo.py, exported by MXNet, converted by ``mxcompat torch PREFIX 0 -o DIR
--input-shape ...`` (verified node by node against MXNet: it is installed here), and the written
model.py, run where MXNet cannot be imported, gives MXNet's outputs.

A model the converter cannot take yet is marked xfail(strict) with what its conversion names:
the day it converts, the test fails until its mark goes."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support import zoo
from tests.support.processes import subprocess_env

pytestmark = [zoo.NEEDS_ZOO, zoo.NEEDS_TORCH]

# Why a model does not convert yet, per model, from what `mxcompat torch` says (`--check` lists
# every operator of every model here as mapped: what fails is the node-by-node verification).
LACKS = {}

# model.py's run: MXNet and mxcompat unimportable, as on a machine that never had them.
_RUN = """import sys
sys.modules["mxnet"] = None
sys.modules["mxcompat"] = None
import os
import numpy as np
import safetensors.torch
import torch

directory, out, inputs = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, directory)
import model

net = model.MXNetModel()
net.load_state_dict(safetensors.torch.load_file(os.path.join(directory, "weights.safetensors")))
net.eval()
with torch.no_grad():
    got = net(*[torch.from_numpy(np.load(p)) for p in inputs])
for i, value in enumerate(got if isinstance(got, (list, tuple)) else [got]):
    np.save(os.path.join(out, "torch_%d.npy" % i), value.numpy())
print("mxnet" in sys.modules and sys.modules["mxnet"] is not None)
"""


def _param(name):
    marks = []
    if name in LACKS:
        marks.append(pytest.mark.xfail(strict=True, reason="to_torch: " + LACKS[name]))
    return pytest.param(name, marks=marks)


def _convert(built, out):
    args = [built.prefix, str(built.epoch), "-o", out]
    for shape in built.input_shapes.values():
        args += ["--input-shape", ",".join(map(str, shape))]
    return subprocess.run(
        [sys.executable, "-m", "mxcompat", "torch"] + args,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )


def _run_without_mxnet(built, out, tmp_path):
    home = os.path.dirname(built.prefix)
    inputs = [os.path.join(home, "input_%d.npy" % i) for i in range(len(built.inputs))]
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, out, str(tmp_path)] + inputs,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=str(tmp_path),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip() == "False"  # no MXNet in that process
    got = []
    while os.path.exists(str(tmp_path / ("torch_%d.npy" % len(got)))):
        got.append(np.load(str(tmp_path / ("torch_%d.npy" % len(got)))))
    return got


def _close(got, want, what, rtol=1e-4):
    """``got`` is MXNet's ``want`` to float32's rounding over a deep network: each element
    within ``rtol`` of the output's largest magnitude."""
    assert got.shape == want.shape, what
    assert got.dtype == want.dtype, what
    worst, allowed = float(np.abs(got.astype(np.float64) - want).max()), _tolerance(want, rtol)
    assert worst <= allowed, "%s: %g off (tolerance %g)" % (what, worst, allowed)


def _tolerance(want, rtol):
    """``rtol`` of ``want``'s largest magnitude (at least 1)."""
    return rtol * max(float(np.abs(want).max()), 1.0)


def _same_detections(got, want, name, rtol=1e-4):
    """ids, scores, boxes: the same kept rows (id >= 0) in the same places, scores to rounding
    (``_close``'s tolerance) place by place; the rows nothing was kept in are -1 on both sides.
    Each kept row of MXNet's is model.py's row in its place (the same id, score and box, to
    rounding), or, where two detections' scores agree to rounding (a detector sorts by score:
    they may come in either order), another row of model.py's, each matched once."""
    assert [g.shape for g in got] == [w.shape for w in want], name
    # One row a detection: ids and scores (N, 1), boxes (N, 4).
    ids, scores, g_ids, g_scores = (a.reshape(-1, 1) for a in want[:2] + got[:2])
    boxes, g_boxes = (a.reshape(-1, a.shape[-1]) for a in (want[2], got[2]))
    kept, g_kept = ids[:, 0] >= 0, g_ids[:, 0] >= 0
    assert kept.any(), "%s: MXNet kept no box: the test would show nothing" % name
    np.testing.assert_array_equal(g_kept, kept, err_msg=name)
    np.testing.assert_array_equal(g_ids[~kept], ids[~kept], err_msg=name)
    _close(g_scores[kept], scores[kept], name + " scores", rtol)
    score_tol, box_tol = _tolerance(scores, rtol), _tolerance(boxes, rtol)

    def same(q, r):  # model.py's row q is MXNet's row r
        return (
            g_ids[q, 0] == ids[r, 0]
            and abs(float(g_scores[q, 0]) - float(scores[r, 0])) <= score_tol
            and np.abs(g_boxes[q] - boxes[r]).max() <= box_tol
        )

    moved = [r for r in np.flatnonzero(kept) if not same(r, r)]
    unused = set(moved)
    for r in moved:
        match = [q for q in sorted(unused) if same(q, r)]
        assert match, "%s: MXNet's row %d (id %g, score %g, box %s) is not in model.py's" % (
            name,
            r,
            ids[r, 0],
            scores[r, 0],
            boxes[r],
        )
        unused.discard(match[0])


@pytest.mark.parametrize("name", [_param(n) for n in zoo.MODELS])
def test_converts_and_runs_without_mxnet(name, zoo_model, tmp_path):
    built = zoo_model(name)
    out = str(tmp_path / "torch")
    conversion = _convert(built, out)
    assert conversion.returncode == 0, conversion.stderr[-4000:]
    got = _run_without_mxnet(built, out, tmp_path)
    assert len(got) == len(built.outputs), name
    if zoo.KIND[name] == "detector":
        _same_detections(got, built.outputs, name)
    else:
        for i, (g, w) in enumerate(zip(got, built.outputs)):
            _close(g, w, "%s output %d" % (name, i))
