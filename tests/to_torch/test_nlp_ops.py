"""to_torch on the operators of GluonNLP's Transformer encoder, BERT and AWD-LSTM language
model: ``SequenceMask``/``SequenceLast``/``SequenceReverse`` with lengths, the interleaved
attention matmuls, ``_contrib_div_sqrt_dim``, ``_contrib_arange_like``, softmax with lengths,
temperature and dtype, variational dropout (``axes``).  Each output, and each gradient MXNet
defines, compared with MXNet's in the same run (``to_torch`` also verifies every node);
settings MXNet does not define are refused by name."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest

import mxcompat

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)


def _has(op):
    return hasattr(mx.sym, op) or hasattr(mx.sym.contrib, op.replace("_contrib_", ""))


def _data(*shape, seed=3):
    return np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32)


def _compare(sym, feed, grads=(), rtol=1e-5, exact=False):
    """Run ``sym`` in MXNet and its conversion on ``feed`` ({input: array}); compare the
    output and, for each input in ``grads``, the gradient of a seeded random head gradient.
    Returns the converted module."""
    import torch

    shapes = {n: v.shape for n, v in feed.items()}
    req = {n: ("write" if n in grads else "null") for n in sym.list_arguments()}
    types = {n: v.dtype for n, v in feed.items()}
    ex = sym.simple_bind(mx.cpu(), grad_req=req, type_dict=types, **shapes)
    for n, a in ex.arg_dict.items():
        a[:] = feed[n]
    want = ex.forward(is_train=bool(grads))[0].asnumpy()
    head = np.random.RandomState(7).uniform(-1, 1, want.shape).astype(want.dtype)
    if grads:
        ex.backward([mx.nd.array(head, dtype=want.dtype)])
    module = mxcompat.to_torch((sym, {}, {}), shapes)
    inputs = [torch.from_numpy(feed[n].copy()) for n in module.mxnet_inputs]
    for n, t in zip(module.mxnet_inputs, inputs):
        t.requires_grad_(n in grads)
    got = module(*inputs)
    assert got.dtype == torch.from_numpy(want).dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == want.shape
    if exact:
        np.testing.assert_array_equal(got.detach().numpy(), want)
    else:
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=rtol)
    if grads:
        got.backward(torch.from_numpy(head))
        for n, t in zip(module.mxnet_inputs, inputs):
            if n in grads:
                mine = t.grad.numpy()
                theirs = ex.grad_dict[n].asnumpy()
                np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=rtol, err_msg=n)
    return module


def _refused(sym, shapes, words):
    with pytest.raises(NotImplementedError) as info:
        mxcompat.to_torch((sym, {}, {}), shapes)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


# --- SequenceMask / SequenceLast / SequenceReverse -----------------------------------------

# Lengths as MXNet takes them: float32, their integer part (2.7 is 2); 0 and the full length.
_LENGTHS = np.array([2.7, 0.0, 5.0, 1.0], dtype=np.float32)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("value", [0.0, -7.5])
@pytest.mark.parametrize("rest", [(), (3,), (2, 3)], ids=str)
def test_sequence_mask(axis, value, rest):
    shape = ((5, 4) if axis == 0 else (4, 5)) + rest
    sym = mx.sym.SequenceMask(
        mx.sym.var("data"),
        mx.sym.var("length"),
        use_sequence_length=True,
        value=value,
        axis=axis,
        name="mask",
    )
    module = _compare(sym, {"data": _data(*shape), "length": _LENGTHS}, grads=("data",), exact=True)
    assert "mxops.sequence_mask" in module.code


def test_sequence_mask_without_lengths_is_the_identity():
    sym = mx.sym.SequenceMask(mx.sym.var("data"), value=3.0, name="mask")
    _compare(sym, {"data": _data(5, 4, 2)}, grads=("data",), exact=True)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("rest", [(), (3,), (2, 3)], ids=str)
def test_sequence_last(axis, rest):
    shape = ((5, 4) if axis == 0 else (4, 5)) + rest
    lengths = np.array([2.7, 1.0, 5.0, 3.0], dtype=np.float32)
    sym = mx.sym.SequenceLast(
        mx.sym.var("data"), mx.sym.var("length"), use_sequence_length=True, axis=axis
    )
    _compare(sym, {"data": _data(*shape), "length": lengths}, grads=("data",), exact=True)


@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_last_without_lengths_takes_the_last_step(axis):
    sym = mx.sym.SequenceLast(mx.sym.var("data"), axis=axis)
    # MXNet's backward without lengths reads an uninitialised index: the forward only.
    _compare(sym, {"data": _data(5, 4, 3)}, exact=True)


@pytest.mark.parametrize("rest", [(), (3,), (2, 3)], ids=str)
def test_sequence_reverse(rest):
    sym = mx.sym.SequenceReverse(mx.sym.var("data"), mx.sym.var("length"), use_sequence_length=True)
    feed = {"data": _data(5, 4, *rest), "length": _LENGTHS}
    _compare(sym, feed, grads=("data",), exact=True)


def test_sequence_reverse_without_lengths_flips_every_step():
    sym = mx.sym.SequenceReverse(mx.sym.var("data"))
    _compare(sym, {"data": _data(5, 4, 3)}, grads=("data",), exact=True)


@pytest.mark.parametrize("op", ["SequenceMask", "SequenceLast", "SequenceReverse"])
def test_sequence_ops_take_integer_lengths(op):
    sym = getattr(mx.sym, op)(mx.sym.var("data"), mx.sym.var("length"), use_sequence_length=True)
    feed = {"data": _data(5, 4, 3), "length": np.array([3, 5, 1, 4], dtype=np.int32)}
    _compare(sym, feed, grads=("data",), exact=True)


def test_sequence_ops_verify_with_random_lengths():
    # to_torch's own check feeds whole lengths in [1, steps] (MXNet reads outside the
    # array for others): a graph of all three converts with its lengths an input.
    x, length = mx.sym.var("data"), mx.sym.var("length")
    masked = mx.sym.SequenceMask(x, length, use_sequence_length=True, value=1.0)
    rev = mx.sym.SequenceReverse(masked, length, use_sequence_length=True)
    sym = mx.sym.SequenceLast(rev, length, use_sequence_length=True)
    module = mxcompat.to_torch((sym, {}, {}), {"data": (6, 3, 2), "length": (3,)})
    assert module.mxnet_inputs == ["data", "length"]


@pytest.mark.parametrize(
    "make,words",
    [
        (lambda x: mx.sym.SequenceMask(x, axis=2), ["SequenceMask", "axis=2"]),
        (lambda x: mx.sym.SequenceReverse(x, axis=1), ["SequenceReverse", "axis=1"]),
    ],
    ids=["mask-axis-2", "reverse-axis-1"],
)
def test_sequence_axes_mxnet_does_not_define_are_refused(make, words):
    _refused(make(mx.sym.var("data")), {"data": (3, 4, 5)}, words)


# --- the interleaved attention matmuls -------------------------------------------------------

_INTERLEAVED = pytest.mark.skipif(
    not hasattr(mx.sym.contrib, "interleaved_matmul_selfatt_qk"),
    reason="MXNet %s has no interleaved attention operators (added in 1.6)" % mx.__version__,
)


@_INTERLEAVED
@pytest.mark.parametrize("heads", [1, 2, 4])
def test_interleaved_self_attention(heads):
    steps, batch, units = 5, 3, 8
    qkv = mx.sym.var("qkv")
    score = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=heads, name="qk")
    att = mx.sym.softmax(score, axis=-1, name="att")
    out = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=heads, name="valatt")
    feed = {"qkv": _data(steps, batch, 3 * units)}
    _compare(score, feed, grads=("qkv",))
    _compare(out, feed, grads=("qkv",))


@_INTERLEAVED
def test_interleaved_self_attention_layout_is_heads_then_q_k_v():
    # Each head's query, key and value side by side: (heads, 3, head_dim), batch-major scores.
    import torch

    steps, batch, heads, d = 3, 2, 2, 4
    x = _data(steps, batch, heads * 3 * d)
    sym = mx.sym.contrib.interleaved_matmul_selfatt_qk(mx.sym.var("qkv"), heads=heads)
    module = _compare(sym, {"qkv": x})
    t = x.reshape(steps, batch, heads, 3, d)
    q, k = t[:, :, :, 0], t[:, :, :, 1]
    want = np.einsum("qbhd,kbhd->bhqk", q, k).reshape(batch * heads, steps, steps) / 2.0
    with torch.no_grad():
        got = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@_INTERLEAVED
@pytest.mark.parametrize("heads", [1, 2])
def test_interleaved_encoder_decoder_attention(heads):
    q_steps, kv_steps, batch, units = 4, 6, 3, 8
    q, kv = mx.sym.var("q"), mx.sym.var("kv")
    score = mx.sym.contrib.interleaved_matmul_encdec_qk(q, kv, heads=heads, name="qk")
    att = mx.sym.softmax(score, axis=-1, name="att")
    out = mx.sym.contrib.interleaved_matmul_encdec_valatt(kv, att, heads=heads, name="valatt")
    feed = {"q": _data(q_steps, batch, units), "kv": _data(kv_steps, batch, 2 * units, seed=4)}
    _compare(score, feed, grads=("q", "kv"))
    _compare(out, feed, grads=("q", "kv"))


@_INTERLEAVED
def test_div_sqrt_dim():
    sym = mx.sym.contrib.div_sqrt_dim(mx.sym.var("data"))
    _compare(sym, {"data": _data(2, 3, 7)}, grads=("data",), rtol=1e-6)


@pytest.mark.skipif(
    not hasattr(mx.sym.contrib, "arange_like"),
    reason="MXNet %s has no arange_like" % mx.__version__,
)
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"start": 2.5, "step": -0.5},
        {"repeat": 3},
        {"axis": 1},
        {"axis": -1, "start": 1.0, "step": 2.0, "repeat": 2},
        {"ctx": "cpu(0)"},
    ],
    ids=str,
)
def test_arange_like(options):
    sym = mx.sym.contrib.arange_like(mx.sym.var("data"), **options)
    _compare(sym, {"data": _data(2, 3, 4)}, exact=True)


# --- softmax with lengths, temperature, dtype ------------------------------------------------

_LENGTHS_IN_SOFTMAX = pytest.mark.skipif(
    "use_length" not in (mx.sym.softmax.__doc__ or ""),
    reason="MXNet %s's softmax takes no lengths (added in 1.6)" % mx.__version__,
)


@_LENGTHS_IN_SOFTMAX
@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("temperature", [None, 2.0])
def test_softmax_with_lengths(axis, temperature):
    shape = (3, 5, 4)
    rest = [s for i, s in enumerate(shape) if i != axis % 3]
    steps = shape[axis]
    # MXNet's softmax takes integer lengths only.
    lengths = np.random.RandomState(1).randint(0, steps + 1, rest).astype(np.int32)
    lengths.flat[0] = steps
    options = {} if temperature is None else {"temperature": temperature}
    sym = mx.sym.softmax(
        mx.sym.var("data"), mx.sym.var("length"), axis=axis, use_length=True, **options
    )
    feed = {"data": _data(*shape), "length": lengths}
    module = _compare(sym, feed, grads=("data",))
    assert "mxops.softmax" in module.code


@_LENGTHS_IN_SOFTMAX
def test_log_softmax_with_use_length_is_refused():
    # MXNet's log_softmax takes one input: use_length=True fails its shape inference.
    sym = mx.sym.log_softmax(mx.sym.var("data"), use_length=True)
    _refused(sym, {"data": (2, 3)}, ["log_softmax", "use_length=True"])


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_dtype_and_temperature(op):
    sym = getattr(mx.sym, op)(mx.sym.var("data"), axis=1, temperature=0.5, dtype="float64")
    _compare(sym, {"data": _data(2, 6, 3)}, grads=("data",))


# --- Dropout with axes -----------------------------------------------------------------------


def test_variational_dropout_is_the_identity_in_eval_and_shares_its_mask():
    import torch

    x = _data(6, 4, 50) + 2.0  # no zeros: a zero out is a dropped value
    sym = mx.sym.Dropout(mx.sym.var("data"), p=0.3, axes=(0,), name="drop")
    want = sym.bind(mx.cpu(), {"data": mx.nd.array(x)}).forward(is_train=False)[0].asnumpy()
    module = mxcompat.to_torch((sym, {}, {}), {"data": x.shape})
    assert "mxops.dropout" in module.code
    with torch.no_grad():
        np.testing.assert_array_equal(module(torch.from_numpy(x)).numpy(), want)
        np.testing.assert_array_equal(want, x)
    # MXNet's training forward: one draw per (batch, unit), the same at every step.
    mx.random.seed(0)
    theirs = sym.bind(mx.cpu(), {"data": mx.nd.array(x)}).forward(is_train=True)[0].asnumpy()
    module.train()
    torch.manual_seed(0)
    mine = module(torch.from_numpy(x)).detach().numpy()
    for out in (theirs, mine):
        kept = out != 0
        assert (kept == kept[:1]).all()  # constant along axis 0
        np.testing.assert_allclose(out[kept], x[kept] / np.float32(0.7), rtol=1e-6)
        assert 0.55 < kept.mean() < 0.85, kept.mean()
    # Not torch's element-wise dropout: a mask that varies along the steps would not pass.
    naive = torch.nn.functional.dropout(torch.from_numpy(x), 0.3, True).numpy() != 0
    assert not (naive == naive[:1]).all()


def test_variational_dropout_mode_always_drops_in_eval():
    import torch

    x = _data(6, 200, 5) + 2.0
    sym = mx.sym.Dropout(mx.sym.var("data"), p=0.5, axes=(0, 2), mode="always")
    module = mxcompat.to_torch((sym, {}, {}), {"data": x.shape}, verify=False)
    with torch.no_grad():
        out = module(torch.from_numpy(x)).numpy()
    kept = out != 0
    assert (kept == kept[:1, :, :1]).all()
    np.testing.assert_allclose(out[kept], x[kept] * 2.0, rtol=1e-6)
    assert 0.35 < kept.mean() < 0.65, kept.mean()
    mx.random.seed(0)
    theirs = sym.bind(mx.cpu(), {"data": mx.nd.array(x)}).forward(is_train=False)[0].asnumpy()
    kept = theirs != 0
    assert (kept == kept[:1, :, :1]).all() and 0.35 < kept.mean() < 0.65, kept.mean()


def test_dropout_with_a_negative_axis_is_refused():
    sym = mx.sym.Dropout(mx.sym.var("data"), p=0.3, axes=(-1,))
    _refused(sym, {"data": (3, 4)}, ["Dropout", "axes=(-1,)"])


# --- GroupNorm, InstanceNorm, LayerNorm, batch_dot -------------------------------------------


def _outputs(sym, feed):
    """MXNet's outputs and the converted module's, as lists of arrays."""
    import torch

    ex = sym.bind(mx.cpu(), {n: mx.nd.array(v) for n, v in feed.items()})
    want = [o.asnumpy() for o in ex.forward(is_train=False)]
    module = mxcompat.to_torch((sym, {}, {}), {n: v.shape for n, v in feed.items()})
    with torch.no_grad():
        got = module(*[torch.from_numpy(feed[n]) for n in module.mxnet_inputs])
    got = [g.numpy() for g in (got if isinstance(got, (tuple, list)) else [got])]
    return want, got, module


def _norm_feed(shape, params, seed=0):
    rng = np.random.RandomState(seed)
    feed = {"data": _data(*shape)}
    for name, size in params.items():
        feed[name] = rng.uniform(0.5, 1.5 if name == "gamma" else 0.5, size).astype(np.float32)
    return feed


@pytest.mark.skipif(
    not hasattr(mx.sym, "GroupNorm"), reason="MXNet %s has no GroupNorm" % mx.__version__
)
@pytest.mark.parametrize("groups", [1, 2, 3])
@pytest.mark.parametrize("eps", [1e-5, 0.1])
@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 6, 3, 4)], ids=str)
def test_group_norm_scales_each_group(groups, eps, shape):
    # gamma and beta hold one value per group (PyTorch's GroupNorm: per channel).
    sym = mx.sym.GroupNorm(
        mx.sym.var("data"), mx.sym.var("gamma"), mx.sym.var("beta"), num_groups=groups, eps=eps
    )
    feed = _norm_feed(shape, {"gamma": groups, "beta": groups})
    _compare(sym, feed, grads=("data", "gamma", "beta"), rtol=1e-4)


@pytest.mark.skipif(
    not hasattr(mx.sym, "GroupNorm"), reason="MXNet %s has no GroupNorm" % mx.__version__
)
def test_group_norm_output_mean_var():
    sym = mx.sym.GroupNorm(
        mx.sym.var("data"),
        mx.sym.var("gamma"),
        mx.sym.var("beta"),
        num_groups=2,
        eps=0.01,
        output_mean_var=True,
    )
    want, got, _ = _outputs(sym, _norm_feed((3, 4, 5), {"gamma": 2, "beta": 2}))
    assert len(want) == len(got) == 3
    for w, g in zip(want, got):
        assert w.shape == g.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("eps", [None, 1e-5])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 4)], ids=str)
def test_instance_norm(eps, shape):
    options = {} if eps is None else {"eps": eps}  # MXNet's default: 1e-3
    sym = mx.sym.InstanceNorm(
        mx.sym.var("data"), mx.sym.var("gamma"), mx.sym.var("beta"), **options
    )
    feed = _norm_feed(shape, {"gamma": 3, "beta": 3})
    _compare(sym, feed, grads=("data", "gamma", "beta"), rtol=1e-4)


@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("eps", [1e-5, 0.1])
def test_layer_norm(axis, eps):
    shape = (3, 4, 5)
    sym = mx.sym.LayerNorm(
        mx.sym.var("data"), mx.sym.var("gamma"), mx.sym.var("beta"), axis=axis, eps=eps
    )
    size = shape[axis]
    feed = _norm_feed(shape, {"gamma": size, "beta": size})
    _compare(sym, feed, grads=("data", "gamma", "beta"), rtol=1e-4)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm_output_mean_var(axis):
    sym = mx.sym.LayerNorm(
        mx.sym.var("data"),
        mx.sym.var("gamma"),
        mx.sym.var("beta"),
        axis=axis,
        eps=0.01,
        output_mean_var=True,
    )
    size = (3, 4, 5)[axis]
    want, got, module = _outputs(sym, _norm_feed((3, 4, 5), {"gamma": size, "beta": size}))
    assert "mxops.layer_norm_moments" in module.code
    assert len(want) == len(got) == 3
    for w, g in zip(want, got):
        assert w.shape == g.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("batch", [(3,), (2, 3)], ids=str)
def test_batch_dot(transpose_a, transpose_b, batch):
    if len(batch) > 1 and mx.__version__ < "1.6":
        pytest.skip("MXNet %s's batch_dot takes 3-d arrays only" % mx.__version__)
    a_shape = batch + ((5, 4) if transpose_a else (4, 5))
    b_shape = batch + ((6, 5) if transpose_b else (5, 6))
    sym = mx.sym.batch_dot(
        mx.sym.var("a"), mx.sym.var("b"), transpose_a=transpose_a, transpose_b=transpose_b
    )
    feed = {"a": _data(*a_shape), "b": _data(*b_shape, seed=5)}
    _compare(sym, feed, grads=("a", "b"), rtol=1e-5)


@_INTERLEAVED
def test_interleaved_attention_with_no_heads_is_refused():
    sym = mx.sym.contrib.interleaved_matmul_selfatt_qk(mx.sym.var("qkv"), heads=0)
    _refused(sym, {"qkv": (3, 2, 6)}, ["_contrib_interleaved_matmul_selfatt_qk", "heads=0"])


@pytest.mark.skipif(
    not hasattr(mx.sym.contrib, "arange_like"),
    reason="MXNet %s has no arange_like" % mx.__version__,
)
def test_arange_like_repeat_0_is_refused():
    # MXNet divides by the repeat count.
    sym = mx.sym.contrib.arange_like(mx.sym.var("data"), repeat=0)
    _refused(sym, {"data": (2, 3)}, ["_contrib_arange_like", "repeat=0"])


@pytest.mark.skipif(
    not hasattr(mx.sym.contrib, "arange_like"),
    reason="MXNet %s has no arange_like" % mx.__version__,
)
def test_arange_like_of_integers_casts_start_and_step():
    # In an integer array MXNet takes start 1.5 as 1 and step 2.5 as 2.
    sym = mx.sym.contrib.arange_like(mx.sym.var("data"), start=1.5, step=2.5, repeat=2)
    _compare(sym, {"data": np.zeros((2, 5), np.int32)}, exact=True)
