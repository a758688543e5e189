"""mxcompat.to_torch on every family of MXNet's Gluon model zoo (vision), randomly initialised
(BatchNorm statistics too, so they count), eval outputs within 1e-4 of MXNet's: from the
HybridBlock, and from the same net exported and loaded back as a Module.  verify=True checks
every node on the way; the final outputs are compared here again on another input.

torch is in the torch-* tox envs only (the torch extra); elsewhere these tests skip."""

import importlib.util
import os

import mxnet as mx
import numpy as np
import pytest
from mxnet.gluon.model_zoo import vision

import mxcompat

# find_spec, not `import torch`: tests/ on sys.path could make a stray folder a namespace package.
_SPEC = importlib.util.find_spec("torch")
needs_torch = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)

# name: the smallest input side the architecture takes (its fixed final pooling, or five
# stride-2 stages); CI time is tight.
FAMILIES = {
    "resnet18_v1": 32,
    "resnet18_v2": 32,
    "vgg11": 32,
    "vgg11_bn": 32,
    "alexnet": 64,
    "densenet121": 224,
    "squeezenet1.0": 224,
    "squeezenet1.1": 224,
    "inceptionv3": 299,
    "mobilenet0.25": 32,
    "mobilenetv2_0.25": 32,
}


def _random_net(name, side):
    mx.random.seed(7)
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier(magnitude=2.5))
    net.hybridize()
    x = mx.nd.random.uniform(-1, 1, shape=(2, 3, side, side))
    net(x)
    rng = np.random.RandomState(1)
    # Random statistics: a net fresh from initialize() has mean 0, var 1, which hides
    # BatchNorm mistakes.
    for pname, param in net.collect_params().items():
        if pname.endswith("running_mean"):
            param.set_data(mx.nd.array(rng.uniform(-0.2, 0.2, param.shape)))
        elif pname.endswith("running_var"):
            param.set_data(mx.nd.array(rng.uniform(0.5, 1.5, param.shape)))
    return net, x


def _torch_output(module, x):
    import torch

    with torch.no_grad():
        return module(torch.from_numpy(x.asnumpy())).numpy()


def _assert_close(actual, expected, rtol=1e-4):
    scale = float(np.abs(expected).max())
    worst = float(np.abs(actual.astype(np.float64) - expected).max())
    assert actual.shape == expected.shape
    assert worst <= rtol * scale, (worst, scale)


@needs_torch
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_model_zoo_family_block_and_exported_module(name, tmp_path):
    side = FAMILIES[name]
    net, x = _random_net(name, side)
    expected = net(x).asnumpy()
    module = mxcompat.to_torch(net, [(2, 3, side, side)])
    assert not module.training
    _assert_close(_torch_output(module, x), expected)
    # Parameters bit for bit, each named after its MXNet parameter in mxnet_names.
    params = {p.name: p.data().asnumpy() for p in net.collect_params().values()}
    state = {module.mxnet_names[k]: v for k, v in module.state_dict().items()}
    assert set(state) == set(params)
    for pname, value in params.items():
        assert np.array_equal(state[pname].numpy(), value), pname
    # hybridize + export + Module.load: the same numbers through the checkpoint.
    prefix = os.path.join(str(tmp_path), name)
    net.export(prefix)
    loaded = mx.mod.Module.load(prefix, 0, data_names=["data"], label_names=None)
    # verify=False: the nodes were checked above; the outputs are compared here.
    from_module = mxcompat.to_torch(loaded, verify=False)
    _assert_close(_torch_output(from_module, x), expected)
    if name == "resnet18_v1":
        from_checkpoint = mxcompat.to_torch((prefix, 0), verify=False)
        _assert_close(_torch_output(from_checkpoint, x), expected)
