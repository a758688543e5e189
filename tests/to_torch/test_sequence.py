"""to_torch on sequence models: an embedding + multi-layer bidirectional LSTM / GRU language
model (the fused ``RNN`` operator and its packed parameters), and a transformer encoder block
built from symbols (batch_dot, softmax(axis=), LayerNorm, reshape codes, transpose, broadcast
ops, SliceChannel, Concat, slice_axis, where, clip).  Eval outputs within 1e-4 of MXNet's,
every node verified."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from tests.support.models import BATCH, STEPS, language_model

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)


def _close(actual, expected, rtol=1e-4):
    assert actual.shape == expected.shape
    worst = np.abs(actual.astype(np.float64) - expected).max()
    assert worst <= rtol * np.abs(expected).max(), worst


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_embedding_bidirectional_rnn_language_model(cell):
    import torch

    net, tokens = language_model(cell)
    expected = net(tokens).asnumpy()
    module = mxcompat.to_torch(net, [(STEPS, BATCH)])
    stock = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
    assert type(module.rnn) is stock
    assert "x = self.rnn(x)[0]" in module.code and "mxops.rnn" not in module.code
    with torch.no_grad():
        got = module(torch.from_numpy(tokens.asnumpy())).numpy()
    _close(got, expected)
    # torch's own parameter names and layout (cuDNN takes the flat weights as they are), each
    # mapped to its Gluon parameter.
    params = {p.name: p.data().asnumpy() for p in net.collect_params().values()}
    assert set(params) == set(module.mxnet_names.values())
    rnn = net.rnn.prefix
    assert module.mxnet_names["rnn.weight_ih_l1_reverse"] == rnn + "r1_i2h_weight"
    assert module.mxnet_names["rnn.bias_hh_l0"] == rnn + "l0_h2h_bias"
    for name, value in module.state_dict().items():
        assert np.array_equal(value.numpy(), params[module.mxnet_names[name]]), name


def transformer_block(units=8, heads=2, hidden=16):
    x = mx.sym.var("data")  # (batch, steps, units)
    qkv = mx.sym.FullyConnected(x, num_hidden=3 * units, flatten=False, name="qkv")
    q, k, v = mx.sym.SliceChannel(qkv, num_outputs=3, axis=-1, name="split")

    def heads_first(t, name):
        t = mx.sym.reshape(t, shape=(0, 0, -4, heads, -1), name=name + "_split_heads")
        t = mx.sym.transpose(t, axes=(0, 2, 1, 3), name=name + "_t")
        return mx.sym.reshape(t, shape=(-3, 0, 0), name=name + "_merge")

    q, k, v = heads_first(q, "q"), heads_first(k, "k"), heads_first(v, "v")
    score = mx.sym.batch_dot(q, k, transpose_b=True, name="score")
    score = mx.sym.broadcast_div(score, mx.sym.sqrt(mx.sym.ones((1, 1, 1)) * (units // heads)))
    keep = mx.sym.broadcast_greater(score, mx.sym.zeros((1, 1, 1)), name="keep")
    score = mx.sym.where(keep, score, score * 0.5, name="leaky_mask")
    att = mx.sym.softmax(score, axis=-1, name="att")
    ctx = mx.sym.batch_dot(att, v, name="ctx")
    ctx = mx.sym.reshape(ctx, shape=(-4, -1, heads, 0, 0), name="ctx_split")
    ctx = mx.sym.transpose(ctx, axes=(0, 2, 1, 3), name="ctx_t")
    ctx = mx.sym.reshape(ctx, shape=(0, 0, -3), name="ctx_merge")
    proj = mx.sym.FullyConnected(ctx, num_hidden=units, flatten=False, name="proj")
    y = mx.sym.LayerNorm(mx.sym.broadcast_add(x, proj), axis=-1, name="ln1")
    both = mx.sym.Concat(y, x, dim=2, name="both")
    ffn = mx.sym.FullyConnected(both, num_hidden=hidden, flatten=False, name="ffn1")
    ffn = mx.sym.clip(mx.sym.Activation(ffn, act_type="relu"), 0, 6, name="relu6")
    ffn = mx.sym.slice_axis(ffn, axis=2, begin=0, end=hidden // 2, name="half")
    ffn = mx.sym.FullyConnected(ffn, num_hidden=units, flatten=False, name="ffn2")
    return mx.sym.LayerNorm(mx.sym.broadcast_add(y, ffn), axis=-1, name="ln2")


def test_transformer_encoder_block_from_symbols():
    import torch

    sym = transformer_block()
    shape = (2, 4, 8)
    rng = np.random.RandomState(0)
    arg_shapes, _, _ = sym.infer_shape(data=shape)
    args = {
        n: mx.nd.array(rng.uniform(-0.5, 0.5, s))
        for n, s in zip(sym.list_arguments(), arg_shapes)
        if n != "data"
    }
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    ex = sym.bind(mx.cpu(), dict(args, data=mx.nd.array(x)))
    expected = ex.forward()[0].asnumpy()
    module = mxcompat.to_torch((sym, args, {}), [shape])
    for op in ("torch.matmul", "mxops.split", "mxops.where", "nn.LayerNorm", "torch.cat"):
        assert op in module.code, op
    with torch.no_grad():
        _close(module(torch.from_numpy(x)).numpy(), expected)
