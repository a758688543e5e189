"""to_onnx beside MXNet 1.9's exporter: our converters (the fused RNN, adaptive average pooling,
repeat, constants of an inferred shape), the outputs in MXNet's order, and the attribute values
no converter takes refused with their node before anything is converted.

On releases before 1.9 (the contrib exporter) only the refusal words and the output order are
ours; the converters here are 1.9's (``mxcompat/onnx/converters.py``)."""

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat._core import facts
from mxcompat.onnx import converters, mxnet_exporter, verify
from tests.support.models import language_model

try:
    import onnx
    import onnxruntime
except ImportError:
    onnx = onnxruntime = None

needs_onnx = pytest.mark.skipif(
    onnxruntime is None, reason="needs onnx and onnxruntime (the onnx extra; see tox.ini)"
)
needs_19 = pytest.mark.skipif(
    not facts.since(facts.MX_ONNX_PACKAGE),
    reason="mxcompat's own converters are for MXNet 1.9's exporter (mx.onnx); this is %s"
    % mx.__version__,
)


def _run(model, feed):
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, feed)


def _opset():
    return mxnet_exporter._opsets()[1]


class _StatefulLM(mx.gluon.HybridBlock):
    """GluonNLP's standard LM in small: embedding, a 2-layer LSTM from given states, a Dense;
    returns the logits and the states, as [logits, h, c].  The embedding (8) is wider than the
    state (6): MXNet 1.9.1's own 2-layer converter reads layer 1 at the input's width."""

    def __init__(self, mode="lstm", **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed = mx.gluon.nn.Embedding(30, 8)
            layer = {"lstm": mx.gluon.rnn.LSTM, "gru": mx.gluon.rnn.GRU}[mode]
            self.rnn = layer(6, num_layers=2, input_size=8)
            self.out = mx.gluon.nn.Dense(30, flatten=False, in_units=6)

    def hybrid_forward(self, F, x, *states):
        y, states = self.rnn(self.embed(x), list(states))
        return [self.out(y)] + list(states)


def _stateful(mode):
    mx.random.seed(5)
    net = _StatefulLM(mode)
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize()
    rng = np.random.RandomState(5)
    tokens = rng.randint(0, 30, (5, 3)).astype("float32")
    states = [
        rng.uniform(-1, 1, (2, 3, 6)).astype("float32") for _ in range(2 if mode == "lstm" else 1)
    ]
    outputs = net(mx.nd.array(tokens), *[mx.nd.array(s) for s in states])
    return net, [tokens] + states, [o.asnumpy() for o in outputs]


@needs_onnx
@needs_19
@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_language_model_with_states_in_mxnets_output_order(mode):
    net, feed, expected = _stateful(mode)
    model = mxcompat.to_onnx(net, [a.shape for a in feed])  # verify=True
    symbol = net._cached_graph[1]
    assert [o.name for o in model.graph.output] == [
        mxnet_exporter._onnx_name(n) for n in symbol.list_outputs()
    ]
    assert symbol.list_outputs()[0].endswith("dense0_fwd_output")  # logits first, as MXNet
    names = [i.name for i in model.graph.input]
    got = _run(model, dict(zip(names, feed)))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    # The flat parameter vector is split into ONNX's weights: no copy of it stays behind.
    assert not any(t.name.endswith("rnn_param_concat0") for t in model.graph.initializer)


@needs_onnx
@needs_19
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_bidirectional_two_layer_language_model(cell):
    # MXNet 1.9.1's converter refuses a bidirectional RNN of two layers; ours converts it, and
    # the zero states Gluon begins from (shape (4, 0, 6): the batch inferred) are 4x3x6.
    net, tokens = language_model(cell)
    expected = net(tokens).asnumpy()
    model = mxcompat.to_onnx(net, [tokens.shape])
    (got,) = _run(model, {"data": tokens.asnumpy()})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@needs_onnx
@pytest.mark.skipif(
    facts.since(facts.MX_ONNX_PACKAGE), reason="before 1.9 only: the contrib exporter's RNN"
)
def test_outputs_matched_by_name_before_19():
    # The contrib exporter names outputs as before; only the order and verification are ours.
    net, arg = _two_outputs()
    model = mxcompat.to_onnx((net, arg, {}), [(2, 4)])
    assert [o.name for o in model.graph.output] == ["b", "a"]


def _two_outputs():
    if not facts.since((1, 5)):
        pytest.skip("MXNet %s's exporter writes one output of a model of two" % mx.__version__)
    # MXNet's exporter lists a before b (the order it converts them); MXNet's order is b, a.
    data = mx.sym.var("data")
    a = mx.sym.FullyConnected(data, num_hidden=3, name="a")
    b = mx.sym.FullyConnected(data, num_hidden=2, name="b")
    arg = {
        "a_weight": mx.nd.ones((3, 4)) * 0.5,
        "a_bias": mx.nd.zeros((3,)),
        "b_weight": mx.nd.ones((2, 4)),
        "b_bias": mx.nd.ones((2,)),
    }
    return mx.sym.Group([b, a]), arg


@needs_onnx
def test_outputs_keep_mxnets_order():
    net, arg = _two_outputs()
    model = mxcompat.to_onnx((net, arg, {}), [(2, 4)])
    assert [o.name for o in model.graph.output] == ["b", "a"]
    x = np.random.RandomState(0).uniform(-1, 1, (2, 4)).astype("float32")
    b, a = _run(model, {"data": x})
    total = x.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(a, total.repeat(3, 1) * 0.5, rtol=1e-5)
    np.testing.assert_allclose(b, total.repeat(2, 1) + 1, rtol=1e-5)


@needs_onnx
def test_verify_says_which_output_is_missing():
    net, arg = _two_outputs()
    model = mxcompat.to_onnx((net, arg, {}), [(2, 4)])
    broken = type(model)()
    broken.CopyFrom(model)
    broken.graph.output[1].name = "elsewhere"
    broken.graph.node.append(onnx.helper.make_node("Identity", ["a"], ["elsewhere"]))
    with pytest.raises(AssertionError) as info:
        verify._verify(broken, net, arg, ["data"], [(2, 4)], 1e-4, 1e-5)
    assert str(info.value) == (
        "mxcompat.to_onnx: the ONNX model has no output for MXNet's a_output "
        "(its outputs: b, elsewhere)"
    )


def _adaptive(size, side):
    data = mx.sym.var("data")
    net = mx.sym.contrib.AdaptiveAvgPooling2D(data, output_size=size, name="pool")
    x = np.random.RandomState(1).uniform(-1, 1, (2, 3) + side).astype("float32")
    expected = net.eval(mx.cpu(), data=mx.nd.array(x))[0].asnumpy()
    return net, x, expected


@needs_onnx
@needs_19
@pytest.mark.parametrize(
    "size, side, ops",
    [
        ((2, 3), (7, 8), {"Slice", "ReduceMean", "Concat"}),  # cells of unequal extent
        (3, (6, 7), {"AveragePool", "Slice", "ReduceMean", "Concat"}),  # rows even, columns not
        ((2, 2), (8, 6), {"AveragePool"}),  # divisible: one AveragePool
        (1, (5, 5), {"GlobalAveragePool"}),
    ],
)
def test_adaptive_average_pooling_above_one(size, side, ops):
    net, x, expected = _adaptive(size, side)
    model = mxcompat.to_onnx((net, {}, {}), [x.shape])
    assert {n.op_type for n in model.graph.node} == ops
    (got,) = _run(model, {"data": x})
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@needs_onnx
@needs_19
@pytest.mark.parametrize("axis", [None, 1, -1])
def test_repeat_with_static_shapes(axis):
    data = mx.sym.var("data")
    net = mx.sym.repeat(data * 2, repeats=3, axis=axis, name="rep")
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    expected = net.eval(mx.cpu(), data=mx.nd.array(x))[0].asnumpy()
    model = mxcompat.to_onnx((net, {}, {}), [x.shape])
    assert "Shape" not in {n.op_type for n in model.graph.node}
    (got,) = _run(model, {"data": x})
    np.testing.assert_array_equal(got, expected)


def _refused(symbol, shapes, arg=None, aux=None):
    with pytest.raises(NotImplementedError) as info:
        mxcompat.to_onnx((symbol, arg or {}, aux or {}), shapes)
    return str(info.value)


def _prefix():
    return "mxcompat.to_onnx: MXNet %s's ONNX exporter (opset %d) cannot convert " % (
        mx.__version__,
        _opset(),
    )


@needs_onnx
@needs_19
def test_attribute_values_refused_with_their_nodes_before_converting(monkeypatch):
    calls = []
    graph_class = mxnet_exporter._graph_class()
    original = graph_class.create_onnx_graph_proto
    monkeypatch.setattr(
        graph_class,
        "create_onnx_graph_proto",
        lambda *a, **k: calls.append(1) or original(*a, **k),
    )
    data = mx.sym.var("data")
    net = mx.sym.Pooling(data, kernel=(2, 2), pool_type="sum", name="p")
    net = mx.sym.BatchNorm(net, axis=3, name="bn")
    net = mx.sym.Dropout(net, mode="always", name="d")
    net = mx.sym.Pooling(net, kernel=(2, 2), pool_type="sum", name="p2")
    net = mx.sym.Pooling(net, kernel=(1, 1), pool_type="sum", name="p3")
    arg = {"bn_gamma": mx.nd.ones(4), "bn_beta": mx.nd.zeros(4)}
    aux = {"bn_moving_mean": mx.nd.zeros(4), "bn_moving_var": mx.nd.ones(4)}
    message = _refused(net, [(1, 4, 8, 8)], arg, aux)
    assert message == _prefix() + (
        "node 'p' (Pooling: pool_type=sum); node 'bn' (BatchNorm: axis=3); "
        "node 'd' (Dropout: mode=always); 2 more"
    )
    assert calls == []  # refused before MXNet's exporter ran


def _detections(seed, batch=2, boxes=40):
    """Rows of (id in -1..2, score, x1, y1, x2, y2), many overlapping."""
    rng = np.random.RandomState(seed)
    d = np.zeros((batch, boxes, 6), np.float32)
    d[..., 0] = rng.randint(-1, 3, (batch, boxes))
    d[..., 1] = rng.uniform(0, 1, (batch, boxes))
    corner = rng.uniform(0, 20, (batch, boxes, 2))
    d[..., 2:4] = corner
    d[..., 4:6] = corner + rng.uniform(1, 10, (batch, boxes, 2))
    return d


@needs_onnx
@needs_19
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(id_index=0, force_suppress=False),  # per class: MXNet 1.9.1's suppresses across
        dict(id_index=0, force_suppress=False, topk=8),  # the 8 best, then suppressed
        dict(id_index=-1, force_suppress=True, topk=6),
        dict(id_index=0, force_suppress=True),
        dict(id_index=0, background_id=2),  # MXNet 1.9.1's converter refuses it
    ],
)
def test_box_nms_as_mxnet(kwargs):
    data = mx.sym.var("data")
    net = mx.sym.contrib.box_nms(
        data, overlap_thresh=0.3, valid_thresh=0.2, coord_start=2, score_index=1, **kwargs
    )
    for seed in range(5):
        d = _detections(seed)
        expected = net.eval(mx.cpu(), data=mx.nd.array(d))[0].asnumpy()
        model = mxcompat.to_onnx((net, {}, {}), [d.shape], verify=False)
        (got,) = _run(model, {"data": d})
        np.testing.assert_array_equal(got, expected)
        kept = (expected[..., 1] >= 0).sum()
        assert 0 < kept < (d[..., 1] > 0.2).sum()  # some kept, some suppressed


@needs_onnx
@needs_19
def test_box_nms_changing_the_format_is_refused():
    data = mx.sym.var("data")
    net = mx.sym.contrib.box_nms(data, in_format="center", out_format="corner", name="nms")
    assert _refused(net, [(1, 10, 6)]) == _prefix() + (
        "node 'nms' (_contrib_box_nms: in_format=center, out_format=corner)"
    )


@needs_onnx
@needs_19
def test_our_rnn_limits_are_refused_before_converting():
    net = mx.gluon.rnn.LSTM(6, projection_size=4, input_size=5)
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((3, 2, 5)))
    # The layer's inputs: the sequence and its two begin states (h projected to 4).
    message = _refused(net._cached_graph[1], [(3, 2, 5), (1, 2, 4), (1, 2, 6)], _params(net))
    assert message.endswith("(RNN: projection_size=4 (ONNX's LSTM has no projection))")


def _params(net):
    return {k: v.data() for k, v in net.collect_params().items()}


@needs_onnx
@needs_19
def test_a_converters_own_refusal_is_named_with_its_node():
    # linalg.gemm2 with axis given (even its default): no limit of ours knows it; MXNet's
    # converter raises partway, and the error names the node in mxcompat's words.
    a, b = mx.sym.var("a"), mx.sym.var("b")
    net = mx.sym.linalg.gemm2(mx.sym.tanh(a, name="t"), b, axis=-2, name="g2")
    message = _refused(net, [(2, 3), (3, 4)])
    assert message == _prefix() + (
        "node 'g2' (_linalg_gemm2: _linalg_gemm2 does not currently support axis!=None)"
    )


@needs_onnx
def test_a_tie_decided_two_ways_is_said():
    # fc's output is exactly 0 in MXNet; the ONNX copy's bias is 1e-9 (agreeing within the
    # tolerance), and the comparison with 0 flips: the first node that differs is a decision.
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    if not facts.since(facts.MX_ONNX_PACKAGE):
        # 1.3 has no broadcast_greater converter; 1.5's and 1.8's write a float output where
        # onnxruntime expects a bool.
        pytest.skip("MXNet %s's broadcast_greater does not export" % mx.__version__)
    zero = mx.sym.FullyConnected(data, num_hidden=3, name="zero")
    net = mx.sym.broadcast_greater(fc, zero, name="gt")
    arg = {
        "fc_weight": mx.nd.zeros((3, 4)),
        "fc_bias": mx.nd.zeros((3,)),
        "zero_weight": mx.nd.zeros((3, 4)),
        "zero_bias": mx.nd.zeros((3,)),
    }
    model = mxcompat.to_onnx((net, arg, {}), [(2, 4)])
    broken = type(model)()
    broken.CopyFrom(model)
    for tensor in broken.graph.initializer:
        if tensor.name == "fc_bias":
            tensor.CopyFrom(onnx.numpy_helper.from_array(np.full(3, 1e-9, "float32"), "fc_bias"))
    with pytest.raises(AssertionError) as info:
        verify._verify(broken, net, arg, ["data"], [(2, 4)], 1e-4, 1e-5)
    assert str(info.value).endswith(
        "the first node that differs is 'gt' (broadcast_greater), largest difference 1: a "
        "comparison, ranking or rounding of inputs that agree within the tolerance, so values "
        "within rounding of each other (ties, as a randomly initialised network's saturated "
        "outputs have) were decided two ways"
    )


def test_limits_table_names_real_converters():
    # Every op our table limits is one MXNet 1.9.1's exporter converts (read from its source).
    assert set(converters.MXNET_19_LIMITS) >= {"Pooling", "BatchNorm", "_contrib_box_nms"}
    assert set(converters.CONVERTERS) == {
        "_contrib_AdaptiveAvgPooling2D",
        "RNN",
        "_zeros",
        "_ones",
        "_full",
        "repeat",
        "_contrib_box_nms",
    }
