"""The other dtypes: ``to_torch(verify=True)`` on float64 and float16 networks (fed and bound in
the network's own type: MXNet refuses an input of another), and the converted float32 model
under bf16 and fp16 autocast, finite and close to its float32 output."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest
from mxnet.gluon import nn
from mxnet.gluon.model_zoo import vision

import mxcompat

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)


def _prepared(net, dtype, side):
    """``net`` initialised, cast to ``dtype``, hybridized and run once on a seeded (2, 3, side,
    side) input, its BatchNorm statistics set away from (0, 1) so a BatchNorm slip shows;
    (net, input)."""
    net.initialize(mx.init.Xavier())
    net.cast(dtype)
    net.hybridize()
    rng = np.random.RandomState(1)
    x = mx.nd.array(rng.uniform(-1, 1, (2, 3, side, side)), dtype=dtype)
    net(x)
    for name, param in net.collect_params().items():
        if name.endswith("running_mean"):
            param.set_data(mx.nd.array(rng.uniform(-0.2, 0.2, param.shape), dtype=param.dtype))
        elif name.endswith("running_var"):
            param.set_data(mx.nd.array(rng.uniform(0.5, 1.5, param.shape), dtype=param.dtype))
    return net, x


def _resnet(dtype):
    mx.random.seed(0)
    net = vision.resnet18_v1(classes=4, thumbnail=True)
    return _prepared(net, dtype, 32)


def _small(dtype):
    """Convolution, BatchNorm (random statistics), pooling and a Dense head."""
    mx.random.seed(0)
    net = nn.HybridSequential()
    net.add(
        nn.Conv2D(8, 3, padding=1),
        nn.BatchNorm(),
        nn.Activation("relu"),
        nn.MaxPool2D(),
        nn.Conv2D(8, 3, padding=1, use_bias=False),
        nn.BatchNorm(),
        nn.Activation("relu"),
        nn.GlobalAvgPool2D(),
        nn.Dense(4),
    )
    return _prepared(net, dtype, 8)


def test_verify_float64_network():
    """Every node within 1e-10 (float64's rounding is 1e-16: a float32 step anywhere would
    show as 1e-7)."""
    import torch

    net, x = _small("float64")
    module = mxcompat.to_torch(net, [(2, 3, 8, 8)], rtol=1e-10, atol=1e-12)
    assert {p.dtype for p in module.parameters()} == {torch.float64}
    with torch.no_grad():
        got = module(torch.from_numpy(x.asnumpy())).numpy()
    want = net(x).asnumpy()
    assert got.dtype == want.dtype == np.float64
    assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()


def test_verify_float16_network():
    """MXNet 1.x has no float16 GEMM on CPU ("FP16 gemm on cpu not implemented": Convolution
    and FullyConnected refuse), so the float16 network here is what MXNet runs there: PReLU
    (its slopes float16), BatchNorm (its parameters kept in float32 by Gluon's cast, as on a
    GPU), activations and pooling.  The input is fed in float16, the parameters' one type other
    than float32."""
    import torch

    mx.random.seed(0)
    net = nn.HybridSequential()
    net.add(
        nn.PReLU(alpha_initializer=mx.init.Constant(0.3)),
        nn.BatchNorm(),
        nn.Activation("relu"),
        nn.MaxPool2D(),
        nn.BatchNorm(scale=True, center=True),
        nn.Activation("tanh"),
        nn.AvgPool2D(),
    )
    net.initialize()
    net.cast("float16")
    net.hybridize()
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.uniform(-1, 1, (2, 3, 8, 8)), dtype="float16")
    net(x)
    for name, param in net.collect_params().items():
        if name.endswith(("running_mean", "beta")):
            param.set_data(mx.nd.array(rng.uniform(-0.2, 0.2, param.shape), dtype=param.dtype))
        elif name.endswith(("running_var", "gamma")):
            param.set_data(mx.nd.array(rng.uniform(0.5, 1.5, param.shape), dtype=param.dtype))
    assert {np.dtype(p.dtype) for p in net.collect_params().values()} == {
        np.dtype(np.float16),
        np.dtype(np.float32),
    }
    # float16 has 11 significant bits (rounding 4.9e-4): each side rounds each operator's
    # output once, and the two may land one ulp apart.
    module = mxcompat.to_torch(net, [(2, 3, 8, 8)], rtol=2e-3, atol=0)
    with torch.no_grad():
        got = module(torch.from_numpy(x.asnumpy())).numpy()
    want = net(x).asnumpy()
    assert got.dtype == want.dtype == np.float16
    assert np.abs(got.astype(np.float64) - want).max() <= 2e-3 * np.abs(want).max()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_is_finite_and_close_to_float32(dtype):
    """bf16 keeps 8 significant bits (rounding 2^-8 = 3.9e-3 per operation), fp16 11 (2^-11 =
    4.9e-4), against float32's 24.  Through the ResNet-18's 18 convolutions (each a sum of up
    to 4608 rounded products, accumulated in float32 under autocast) and its BatchNorms, the
    logits part from float32's by 3.5e-3 of their largest value in bf16 and 4.8e-4 in fp16
    (measured on this net, x86 CPU; the assertion's message gives this run's): about one
    rounding of the narrow type.  The bounds, 3e-2 and 5e-3, leave ten times that for other
    CPUs' kernels, and stay far under what a wrong operator gives (the logits' own spread).
    Not bit-equal: autocast really ran in the narrow type."""
    import torch

    net, x = _resnet("float32")
    module = mxcompat.to_torch(net, [(2, 3, 32, 32)], verify=False)
    data = torch.from_numpy(x.asnumpy())
    with torch.no_grad():
        want = module(data).numpy().astype(np.float64)
        with torch.autocast("cpu", dtype=getattr(torch, dtype)):
            got = module(data).float().numpy().astype(np.float64)
    assert np.isfinite(got).all()
    worst = float(np.abs(got - want).max()) / float(np.abs(want).max())
    bound = 3e-2 if dtype == "bfloat16" else 5e-3
    assert 0 < worst <= bound, "%s: %.3g of the largest logit" % (dtype, worst)
