"""Serving: the converted module through ``torch.export`` and the AOT path it feeds (the
exported program saved with ``torch.export.save`` and loaded back), on families of the model
zoo and the LSTM language model: the loaded program's output equals the eager module's."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest
from mxnet.gluon.model_zoo import vision

import mxcompat

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)

# The smallest inputs these take (CI time is tight); one per kind of block: residual with
# BatchNorm, depthwise with ReLU6, plain convolutions with BatchNorm.
FAMILIES = ["resnet18_v1", "mobilenetv2_0.25", "vgg11_bn"]


def _zoo(name):
    mx.random.seed(7)
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier(magnitude=2.5))
    net.hybridize()
    x = np.random.RandomState(0).uniform(-1, 1, (2, 3, 32, 32)).astype(np.float32)
    net(mx.nd.array(x))
    return net, x


def _lm():
    from tests.support.models import language_model

    net, tokens = language_model("lstm")
    return net, tokens.asnumpy()


def _round_trip(module, x, tmp_path):
    import torch

    args = (torch.from_numpy(x),)
    program = torch.export.export(module, args)
    path = str(tmp_path / "model.pt2")
    torch.export.save(program, path)
    loaded = torch.export.load(path)
    with torch.no_grad():
        want = module(*args)
        got = loaded.module()(*args)
    return got.numpy(), want.numpy()


@pytest.mark.parametrize("name", FAMILIES + ["lstm_lm"])
def test_export_save_load_round_trip(name, tmp_path):
    net, x = _lm() if name == "lstm_lm" else _zoo(name)
    module = mxcompat.to_torch(net, [x.shape], verify=False)
    got, want = _round_trip(module, x, tmp_path)
    assert got.shape == want.shape
    # The same kernels on the same input: equal up to the exported graph's own op order.
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
    # ... and MXNet's output, so the exported graph is the network, not a constant.
    expected = net(mx.nd.array(x)).asnumpy()
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()
