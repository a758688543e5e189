"""The way out to ONNX on the models MXNet users trained: each GluonCV / GluonNLP model of
tests/support/zoo.py, exported by MXNet, converted by ``mxcompat onnx PREFIX 0 --input-shape
...`` (MXNet 1.9.1's exporter with mxcompat's converters beside it, verified in onnxruntime
against MXNet), and the written file runs in onnxruntime on the zoo's input, its outputs in
MXNet's order.

A model that does not convert is in ``REFUSED`` with the one error ``mxcompat onnx`` gives; the
day it converts, its test fails until its entry goes."""

import subprocess
import sys

import numpy as np
import pytest

from tests.support import zoo
from tests.support.processes import subprocess_env

pytestmark = [
    zoo.NEEDS_ZOO,
    pytest.mark.skipif(
        not (zoo.installed("onnx") and zoo.installed("onnxruntime")),
        reason="needs onnx and onnxruntime (the onnx extra)",
    ),
]

# model -> the start of `mxcompat onnx`'s one-line error (after "mxcompat onnx: ").
REFUSED = {}

# Detectors whose random weights (drawn anew by each build) may fail verification: their scores
# hold near-ties (a random Faster R-CNN's proposals had fifteen exactly equal scores, ranked
# apart at its box_nms, whose result on onnxruntime's input is onnxruntime's), and their logits
# reach 1e5-1e6 (CenterNet's heatmap, a YOLOv3 head), where float32 rounding of a convolution
# moves a sigmoid near 0 beyond the tolerance and the ranking picks other boxes
# (docs/guide/onnx.md).  A failure there must be verification's, naming the first node that
# differs; written with --no-verify, the model loads and runs.
MAY_FAIL_VERIFICATION = {
    "ssd_512_resnet50_v1_voc",
    "yolo3_darknet53_voc",
    "yolo3_mobilenet1.0_voc",
    "faster_rcnn_resnet50_v1b_voc",
    "center_net_resnet18_v1b_voc",
}


def _mxcompat_onnx(built, out, *extra):
    shapes = [",".join(str(d) for d in s) for s in built.input_shapes.values()]
    args = [sys.executable, "-m", "mxcompat", "onnx", built.prefix, str(built.epoch), "-o", out]
    for shape in shapes:
        args += ["--input-shape", shape]
    return subprocess.run(
        args + list(extra),
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=1800,
    )


def _error(proc):
    """The command's one-line error: the last line (MXNet logs its own before it)."""
    return proc.stderr.rstrip("\n").rsplit("\n", 1)[-1]


@pytest.mark.parametrize("name", zoo.MODELS)
def test_zoo_model_to_onnx(name, zoo_model, tmp_path):
    import onnx
    import onnxruntime

    built = zoo_model(name)
    out = str(tmp_path / "model.onnx")
    proc = _mxcompat_onnx(built, out)
    if name in REFUSED:
        assert proc.returncode == 1, proc.stdout
        assert _error(proc).startswith("mxcompat onnx: " + REFUSED[name]), proc.stderr
        return
    if name in MAY_FAIL_VERIFICATION and proc.returncode == 1:
        error = _error(proc)
        assert error.startswith(
            "mxcompat onnx: mxcompat.to_onnx: onnxruntime's output differs "
            "from MXNet's beyond atol=1e-05, rtol=0.0001: "
        ), proc.stderr
        assert "the first node that differs is '" in error, error
        proc = _mxcompat_onnx(built, out, "--no-verify")
    else:
        assert proc.stdout.endswith(
            "; onnxruntime %s agrees with MXNet 1.9.1\n" % onnxruntime.__version__
        ), proc.stderr
    assert proc.returncode == 0, proc.stderr
    model = onnx.load(out)
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == list(built.input_shapes)
    # On the zoo's own input: as many outputs as MXNet's, in its order (their values are what
    # verification compared, on its own input).
    session = onnxruntime.InferenceSession(out, providers=["CPUExecutionProvider"])
    got = session.run(None, dict(zip(built.input_shapes, built.inputs)))
    expected = _mxnet(built)
    assert [g.shape for g in got] == [e.shape for e in expected]
    assert [e.shape for e in expected] == [e.shape for e in built.outputs]
    if zoo.KIND[name] == "nlp":
        # The language models' states share their shapes: the values say the order (logits,
        # then each layer's h and c).
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(e).max()))


def _mxnet(built):
    import mxnet as mx

    symbol, arg_params, aux_params = mx.model.load_checkpoint(built.prefix, built.epoch)
    shapes = dict(zip(built.input_shapes, (a.shape for a in built.inputs)))
    executor = symbol.simple_bind(mx.cpu(), grad_req="null", **shapes)
    for arrays, values in ((executor.arg_dict, arg_params), (executor.aux_dict, aux_params)):
        for key, array in arrays.items():
            array[:] = (
                values[key] if key in values else dict(zip(built.input_shapes, built.inputs))[key]
            )
    return [o.asnumpy() for o in executor.forward(is_train=False)]
