"""What ``to_torch`` and ``mxcompat torch`` write is PyTorch code a person keeps: the Gluon block
tree as modules (one class per block class, its differences as constructor arguments), stock
layers, keyword arguments, ruff's default rules and layout, and ``torch.fx`` traces it."""

import importlib.util
import os
import shutil
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest
from mxnet.gluon.model_zoo import vision

import mxcompat

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)


def _zoo(name, side=64):
    mx.random.seed(0)
    net = vision.get_model(name, pretrained=False, classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (1, 3, side, side)))
    net(x)
    return net, x


def _ruff_on(path):
    """ruff check and ruff format --check with default settings on ``path``: (rc, output)."""
    ruff = [sys.executable, "-m", "ruff"] if importlib.util.find_spec("ruff") else None
    if ruff is None and shutil.which("ruff"):
        ruff = ["ruff"]
    if ruff is None:
        pytest.skip("needs ruff (the torch envs install it)")
    out = []
    for args in (["check", "--isolated"], ["format", "--isolated", "--check"]):
        run = subprocess.run(ruff + args + [str(path)], capture_output=True, text=True)
        out.append((run.returncode, run.stdout + run.stderr))
    return out


def _ruff(tmp_path, source):
    """``_ruff_on`` a model.py of ``source``: ([(rc, output)], its text)."""
    from mxcompat.torch.export import model_source

    path = tmp_path / "model.py"
    path.write_text(model_source(source))
    return _ruff_on(path), path.read_text()


def test_written_operators_pass_ruff_and_import_alone(tmp_path):
    from mxcompat.torch import optim_rules, runtime
    from mxcompat.torch.export import write_runtime

    written = write_runtime(str(tmp_path))
    here = os.path.dirname(runtime.__file__)
    expected = sorted(n for n in os.listdir(here) if n.endswith(".py"))
    assert sorted(os.listdir(written)) == expected and "__init__.py" in expected
    shutil.copy(optim_rules.__file__, str(tmp_path / "mxnet_optim.py"))
    for path in (written, tmp_path / "mxnet_optim.py"):
        (check, form) = _ruff_on(path)
        assert check[0] == 0, check[1]
        assert form[0] == 0, form[1]
    # The package imports with torch alone, and offers what the runtime offers.
    code = (
        "import sys; sys.modules['mxnet'] = None; sys.modules['mxcompat'] = None\n"
        "import mxnet_ops, mxnet_optim\n"
        "print(sorted(mxnet_ops.__all__))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(sorted(runtime.__all__))


def test_resnet18_is_torchvisions_shape(tmp_path):
    import torch

    net, x = _zoo("resnet18_v1")
    module = mxcompat.to_torch(net, [x.shape])
    code = module.code
    assert len(code.splitlines()) <= 120, len(code.splitlines())
    classes = [line.split("(")[0][6:] for line in code.splitlines() if line.startswith("class ")]
    assert classes[-1] == "ResNetV1"
    assert 1 <= sum(c.startswith("BasicBlockV1") for c in classes) <= 2, classes
    assert max(len(line) for line in code.splitlines()) <= 100
    assert classes == ["BasicBlockV1", "BasicBlockV1WithDownsample", "ResNetV1"]
    # The guide (a side of 64 or 32 writes the same code) shows this code as it reads.
    guide = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "guide")
    with open(os.path.join(guide, "leaving-for-pytorch.md")) as f:
        shown = f.read().split("```text\nclass BasicBlockV1", 1)[1].split("```", 1)[0]
    shown = "class BasicBlockV1" + shown
    assert shown == code, "docs/guide/leaving-for-pytorch.md shows an older model.py"
    # The tree, as torchvision prints its resnet18.
    text = str(module)
    assert text.startswith("ResNetV1(\n  (features): Sequential(\n    (0): Conv2d(3, 64")
    assert "(1): BatchNorm(64" in text and "(3): MaxPool2d(kernel_size=3" in text
    stages = [module.features[k] for k in range(4, 8)]
    assert all(type(s).__name__ == "Sequential" and len(s) == 2 for s in stages)
    blocks = [b for s in stages for b in s]
    assert all(type(b).__name__.startswith("BasicBlockV1") for b in blocks)
    assert [hasattr(b, "downsample") for b in blocks] == [False, False] + [True, False] * 3
    assert isinstance(module.output, torch.nn.Linear)
    # state_dict keys follow the tree; mxnet_names maps them to MXNet's.
    assert module.mxnet_names["features.0.weight"] == net.prefix + "conv0_weight"
    assert module.mxnet_names["features.4.0.body.1.running_var"] == (
        net.prefix + "stage1_batchnorm0_running_var"
    )
    # The everyday idioms: a new head, a frozen backbone.
    module.output = torch.nn.Linear(512, 3)
    module.features.requires_grad_(False)
    assert module(torch.from_numpy(x.asnumpy())).shape == (1, 3)
    assert [n for n, p in module.named_parameters() if p.requires_grad] == [
        "output.weight",
        "output.bias",
    ]


@pytest.mark.parametrize(
    "name", ["resnet18_v1", "resnet50_v2", "mobilenetv2_1.0", "densenet121", "alexnet"]
)
def test_written_code_passes_ruff_and_fx(name, tmp_path):
    import torch
    import torch.fx

    side = 224 if name in ("densenet121", "alexnet") else 64
    net, x = _zoo(name, side)
    expected = net(x).asnumpy()
    module = mxcompat.to_torch(net, [x.shape])
    (check, form), _ = _ruff(tmp_path, module.mxnet_written)
    assert check[0] == 0, check[1]
    assert form[0] == 0, form[1]
    traced = torch.fx.symbolic_trace(module)
    feed = torch.from_numpy(x.asnumpy())
    with torch.no_grad():
        got = traced(feed).numpy()
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()


def test_lstm_language_model_keeps_its_layers():
    from tests.support.models import language_model

    net, tokens = language_model("lstm")
    module = mxcompat.to_torch(net, [tokens.shape])
    assert [type(m).__name__ for m in module.children()] == ["Embedding", "LSTM", "Linear"]
    forward = module.code.split("class LanguageModel")[1].split("def forward")[1]
    assert len(forward.strip().splitlines()) <= 10, forward


def test_a_module_mlp_is_flat_with_stock_layers(tmp_path):
    import torch

    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    sym = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(sym)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    module = mxcompat.to_torch(mod)
    children = dict(module.named_children())
    assert list(children) == ["fc1", "relu1", "fc2"]
    assert isinstance(children["fc1"], torch.nn.Linear)
    assert isinstance(children["relu1"], torch.nn.ReLU)
    assert module.mxnet_names == {
        "fc1.weight": "fc1_weight",
        "fc1.bias": "fc1_bias",
        "fc2.weight": "fc2_weight",
        "fc2.bias": "fc2_bias",
    }
    (check, form), _ = _ruff(tmp_path, module.mxnet_written)
    assert check[0] == 0 and form[0] == 0, (check, form)


def test_resnet18_checkpoint_rebuilds_the_tree_from_its_names(tmp_path):
    net, x = _zoo("resnet18_v1")
    prefix = os.path.join(str(tmp_path), "resnet")
    net.export(prefix)
    module = mxcompat.to_torch((prefix, 0), [x.shape])
    names = dict(module.named_children())
    assert "stage1" in names and "conv0" in names, list(names)
    assert module.mxnet_names["stage1.conv0.weight"] == net.prefix + "stage1_conv0_weight"
    import torch

    with torch.no_grad():
        got = module(torch.from_numpy(x.asnumpy())).numpy()
    expected = net(x).asnumpy()
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()


def test_every_stock_node_of_a_named_block_is_a_layer():
    """A block the names spell, without children of its own, gets a stock layer for each of its
    nodes that one computes: the Linear and the ReLU after it alike."""
    import torch

    data = mx.sym.var("data")
    weights = {n: mx.sym.var(n) for n in ("net_head_dense0_weight", "net_head_dense0_bias")}
    net = mx.sym.FullyConnected(
        data,
        weights["net_head_dense0_weight"],
        weights["net_head_dense0_bias"],
        num_hidden=4,
        name="net_head_dense0_fwd",
    )
    net = mx.sym.Activation(net, act_type="relu", name="net_head_dense0_relu")
    net = mx.sym.FullyConnected(
        net,
        mx.sym.var("net_body_fc_weight"),
        mx.sym.var("net_body_fc_bias"),
        num_hidden=2,
        name="net_body_fc_fwd",
    )
    args = {
        "net_head_dense0_weight": mx.nd.ones((4, 3)),
        "net_head_dense0_bias": mx.nd.zeros((4,)),
        "net_body_fc_weight": mx.nd.ones((2, 4)),
        "net_body_fc_bias": mx.nd.zeros((2,)),
    }
    module = mxcompat.to_torch((net, args, {}), {"data": (2, 3)})
    layers = [type(m) for m in module.modules() if not list(m.children())]
    assert layers.count(torch.nn.Linear) == 2 and layers.count(torch.nn.ReLU) == 1, module
