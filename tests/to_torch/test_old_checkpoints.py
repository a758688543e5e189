"""Checkpoints as MXNet 0.8-0.12 wrote them (tests/support/legacy_checkpoint.py), read as
MXNet 1.9.1 reads them: MXNet 1.9.1's ``mx.sym.load`` and ``mx.nd.load`` are
the reference: the same graph and attributes from mxcompat's reader, the same outputs from
the converted module, and the same model.py with MXNet blocked."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support import legacy_checkpoint
from tests.support.legacy_checkpoint import INPUT, net_0800, op, var
from tests.support.repo import ROOT

mx = pytest.importorskip("mxnet", reason="MXNet 1.9.1's loader is the reference")


@pytest.fixture
def old_checkpoint(tmp_path):
    prefix = str(tmp_path / "legacy")
    legacy_checkpoint.write(prefix, 7)
    return prefix


def _mxnet_graph(path):
    graph = json.loads(mx.sym.load(path).tojson())
    for node in graph["nodes"]:
        node.setdefault("attrs", {})
    return graph


def test_the_graph_is_mxnet_191s(old_checkpoint):
    from mxcompat.formats.checkpoint import read_symbol

    path = old_checkpoint + "-symbol.json"
    ours, theirs = read_symbol(path), _mxnet_graph(path)
    assert ours["nodes"] == theirs["nodes"]
    assert (ours["arg_nodes"], ours["heads"]) == (theirs["arg_nodes"], theirs["heads"])
    by_name = {n["name"]: n for n in ours["nodes"]}
    # The operators' settings kept; the statistics added with BatchNorm's attributes.
    assert by_name["bn1"]["attrs"]["fix_gamma"] == "False"
    assert by_name["bn1"]["attrs"]["eps"] == "0.002"
    assert by_name["fc1"]["attrs"]["num_hidden"] == "10"
    assert by_name["bn1_moving_var"]["attrs"]["__init__"] == '["one", {}]'
    assert by_name["conv_weight"]["attrs"]["__lr_mult__"] == "1.2"
    assert by_name["conv_bias"]["attrs"]["__wd_mult__"] == "0"
    assert by_name["fc1_weight"]["attrs"]["__wd_mult__"] == "0.1"


@pytest.mark.parametrize(
    "param, attr",
    [
        ({"axis": "-1"}, {}),  # 0.9.5: axis -1 was the whole array
        ({"axis": "1", "keepdims": "True"}, {"lr_mult": "2", "force_mirroring": "True"}),
    ],
)
def test_argmax_and_hidden_keys(tmp_path, param, attr):
    from mxcompat.formats.checkpoint import read_symbol

    graph = {
        "nodes": [var("data", {"mirror_stage": "1"}), op("argmax", "am", [0], param, attr)],
        "arg_nodes": [0],
        "heads": [[1, 0]],
    }
    path = str(tmp_path / "am-symbol.json")
    with open(path, "w") as f:
        json.dump(graph, f)
    assert read_symbol(path)["nodes"] == _mxnet_graph(path)["nodes"]


def test_a_hidden_key_for_no_input_is_refused_as_mxnet_refuses_it(tmp_path):
    from mxcompat.formats.checkpoint import CheckpointError, read_symbol

    graph = net_0800()
    graph["nodes"][6]["attr"]["foo_lr_mult"] = "3"  # BatchNorm has no input "foo"
    path = str(tmp_path / "bad-symbol.json")
    with open(path, "w") as f:
        json.dump(graph, f)
    with pytest.raises(mx.base.MXNetError, match="foo_lr_mult"):
        mx.sym.load(path)
    with pytest.raises(CheckpointError) as err:
        read_symbol(path)
    assert str(err.value) == (
        "mxcompat: %s: expected attributes MXNet's BatchNorm takes (node 'bn1'), found "
        "'foo_lr_mult', for an input variable 'foo' it does not have" % path
    )


CLI = "import sys\n%sfrom mxcompat.cli import main\nsys.exit(main(sys.argv[1:]))"


def _cli(*args, block_mxnet=False):
    code = CLI % ('sys.modules["mxnet"] = None\n' if block_mxnet else "")
    return subprocess.run(
        [sys.executable, "-c", code, "torch", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


def test_converts_as_mxnet_191_loads_it(old_checkpoint, tmp_path):
    torch = pytest.importorskip("torch", reason="needs torch (the torch extra)")
    from safetensors.torch import load_file

    shape = ",".join(map(str, INPUT))
    outs = [str(tmp_path / "with"), str(tmp_path / "without")]
    # With MXNet: every node checked against MXNet 1.9.1's (the command fails on a difference).
    proc = _cli(old_checkpoint, "7", "-o", outs[0], "--input-shape", shape)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not checked" not in proc.stderr
    proc = _cli(old_checkpoint, "7", "-o", outs[1], "--input-shape", shape, block_mxnet=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not checked against MXNet" in proc.stderr
    for name in ("model.py", "weights.safetensors", "mxnet_names.json"):
        with open(os.path.join(outs[0], name), "rb") as a, open(
            os.path.join(outs[1], name), "rb"
        ) as b:
            assert a.read() == b.read(), name
    # The module against MXNet 1.9.1's own forward of the files as they are.
    sym, args, auxs = mx.model.load_checkpoint(old_checkpoint, 7)
    data = np.random.RandomState(0).uniform(-1, 1, INPUT).astype(np.float32)
    mod = mx.mod.Module(sym, data_names=["data"], label_names=["softmax_label"])
    mod.bind(
        data_shapes=[("data", INPUT)], label_shapes=[("softmax_label", (2,))], for_training=False
    )
    mod.set_params(args, auxs)
    mod.forward(mx.io.DataBatch([mx.nd.array(data)]), is_train=False)
    want = mod.get_outputs()[0].asnumpy()
    sys.path.insert(0, outs[1])
    try:
        from model import MXNetModel
    finally:
        sys.path.remove(outs[1])
        sys.modules.pop("model", None)
    model = MXNetModel()
    model.load_state_dict(load_file(os.path.join(outs[1], "weights.safetensors")))
    with torch.no_grad():
        got = model.eval()(torch.from_numpy(data)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
