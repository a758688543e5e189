"""Checkpoints as MXNet 0.8-0.12 wrote them, read as MXNet 1.9.1 reads them: the symbol file's
nodes with "param" (the operator's settings) and "attr" (the user's: ctx_group, lr_mult,
wd_mult, ARG_lr_mult), without BatchNorm's moving mean and variance (stored in the .params
file, not the graph, before 0.9), the arrays in NDArray's oldest layout (32-bit dimensions, no
magic number).  The files are written here in that form (the form of MXNet's own
tests/python/unittest/save_000800.json); MXNet 1.9.1's ``mx.sym.load`` and ``mx.nd.load`` are
the reference: the same graph and attributes from mxcompat's reader, the same outputs from
the converted module, and the same model.py with MXNet blocked."""

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from tests.support.repo import ROOT

mx = pytest.importorskip("mxnet", reason="MXNet 1.9.1's loader is the reference")


def _var(name, attr=None):
    return {"op": "null", "param": {}, "name": name, "inputs": [], "backward_source_id": -1,
            "attr": attr or {}}  # fmt: skip


def _op(op, name, inputs, param, attr=None):
    return {"op": op, "param": param, "name": name, "inputs": [[i, 0] for i in inputs],
            "backward_source_id": -1, "attr": attr or {}}  # fmt: skip


def net_0800():
    """A small convolutional network in 0.8's form: two BatchNorms (one with fix_gamma
    False and its own eps, one with the defaults), the hidden keys in each of their forms."""
    nodes = [
        _var("data", {"ctx_group": "stage1", "lr_mult": "0.2"}),
        _var("conv_weight", {"ctx_group": "stage1", "wd_mult": "0.3", "weight_lr_mult": "1.2"}),
        _var("conv_bias", {"ctx_group": "stage1"}),
        _op("Convolution", "conv", [0, 1, 2],
            {"kernel": "(3, 3)", "pad": "(1, 1)", "num_filter": "4", "no_bias": "False"},
            {"ctx_group": "stage1", "weight_lr_mult": "1.2", "bias_wd_mult": "0"}),
        _var("bn1_gamma"),
        _var("bn1_beta"),
        _op("BatchNorm", "bn1", [3, 4, 5],
            {"eps": "0.002", "fix_gamma": "False", "momentum": "0.8"}, {"ctx_group": "stage2"}),
        _op("Activation", "relu1", [6], {"act_type": "relu"}),
        _op("Pooling", "pool", [7], {"kernel": "(2, 2)", "stride": "(2, 2)", "pool_type": "max"}),
        _var("bn2_gamma"),
        _var("bn2_beta"),
        _op("BatchNorm", "bn2", [8, 9, 10], {}),
        _op("Flatten", "flat", [11], {}),
        _var("fc1_weight", {"wd_mult": "0.5"}),
        _var("fc1_bias"),
        _op("FullyConnected", "fc1", [12, 13, 14], {"num_hidden": "10", "no_bias": "False"},
            {"weight_wd_mult": "0.1"}),
        _op("Activation", "tanh1", [15], {"act_type": "tanh"}),
        _var("fc2_weight"),
        _var("fc2_bias"),
        _op("FullyConnected", "fc2", [16, 17, 18], {"num_hidden": "3"}),
        _var("softmax_label"),
        _op("SoftmaxOutput", "softmax", [19, 20], {"grad_scale": "1"}),
    ]  # fmt: skip
    args = [i for i, n in enumerate(nodes) if n["op"] == "null"]
    return {"nodes": nodes, "arg_nodes": args, "heads": [[len(nodes) - 1, 0]]}


SHAPES = {
    "conv_weight": (4, 1, 3, 3),
    "conv_bias": (4,),
    "bn1_gamma": (4,),
    "bn1_beta": (4,),
    "bn2_gamma": (4,),
    "bn2_beta": (4,),
    "fc1_weight": (10, 256),
    "fc1_bias": (10,),
    "fc2_weight": (3, 10),
    "fc2_bias": (3,),
}
AUX = ["bn1_moving_mean", "bn1_moving_var", "bn2_moving_mean", "bn2_moving_var"]
INPUT = (2, 1, 16, 16)


def legacy_params(path, arrays):
    """``mx.nd.save``'s list with each array in NDArray's oldest layout (what 0.8 wrote)."""
    out = [struct.pack("<QQQ", 0x112, 0, len(arrays))]
    for value in arrays.values():
        value = np.ascontiguousarray(value, np.float32)
        out.append(struct.pack("<I%dI" % value.ndim, value.ndim, *value.shape))
        out.append(struct.pack("<iii", 1, 0, 0) + value.tobytes())
    out.append(struct.pack("<Q", len(arrays)))
    for name in arrays:
        out.append(struct.pack("<Q", len(name.encode())) + name.encode())
    with open(path, "wb") as f:
        f.write(b"".join(out))


@pytest.fixture
def old_checkpoint(tmp_path):
    rng = np.random.RandomState(3)
    prefix = str(tmp_path / "legacy")
    with open(prefix + "-symbol.json", "w") as f:
        json.dump(net_0800(), f, indent=2)
    arrays = {"arg:" + n: rng.uniform(-0.5, 0.5, s) for n, s in SHAPES.items()}
    for name in AUX:
        low = 0.5 if name.endswith("var") else -0.3
        arrays["aux:" + name] = rng.uniform(low, low + 1.0, (4,))
    legacy_params(prefix + "-0007.params", arrays)
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
        "nodes": [_var("data", {"mirror_stage": "1"}), _op("argmax", "am", [0], param, attr)],
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
