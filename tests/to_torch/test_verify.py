"""to_torch's verification, node by node against MXNet's executor in the same run: where the
module's forward parts from MXNet's, each node is computed again from MXNet's own inputs.  A
node wrong there is named in an ``AssertionError``; where every node agrees there, the model
amplified the two sides' rounding (here: ties a sort ranks its own way), and one
``MXCompatWarning`` says where the outputs part.  Indices of tied values agree either way.
Integers divide as C divides them, as MXNet's do."""

import importlib.util
import warnings

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat import MXCompatWarning

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)

DATA = mx.sym.var("data")


def _tied_topk():
    """A row of 20 zeros (the input times 0): MXNet's std::partial_sort picks indices 10, 19,
    18 of the tie, the module 0, 1, 2."""
    return mx.sym.topk(DATA * 0, k=3, name="ranked")


def _no_warning(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MXCompatWarning)
        return fn()


def test_indices_of_tied_values_agree_either_way():
    ranked = _tied_topk()
    got = mx.nd.topk(mx.nd.zeros((1, 20)), k=3).asnumpy()
    assert got.tolist() == [[10.0, 19.0, 18.0]]  # the tie MXNet breaks its own way
    module = _no_warning(lambda: mxcompat.to_torch((ranked, {}, {}), [(1, 20)]))
    import torch

    with torch.no_grad():
        mine = module(torch.zeros(1, 20))
    assert mine.tolist() == [[0.0, 1.0, 2.0]]


def test_outputs_that_part_through_ties_are_one_warning():
    # The tied indices squared: the two sides square other indices, each node right on
    # MXNet's own inputs.
    ranked = _tied_topk()
    sym = mx.sym.elemwise_mul(ranked, ranked, name="squared")
    with pytest.warns(MXCompatWarning) as caught:
        module = mxcompat.to_torch((sym, {}, {}), [(1, 20)])
    texts = [str(w.message) for w in caught]
    assert len(texts) == 1, texts
    assert texts[0].startswith(
        "mxcompat.to_torch: node 'squared' (op elemwise_mul, in model) is the first whose "
        "output differs from MXNet's (squared_output): largest |difference| 360, max|mxnet| "
        "361 when "
        "the module runs end to end, yet computed from MXNet's own inputs every node agrees "
        "with MXNet's (rtol=0.0001, atol=1e-05)"
    ), texts[0]
    import torch

    with torch.no_grad():
        assert module(torch.zeros(1, 20)).tolist() == [[0.0, 1.0, 4.0]]


def test_a_node_wrong_on_mxnets_own_inputs_is_an_error(monkeypatch):
    from mxcompat.torch import codegen
    from mxcompat.torch.expr import call

    ranked = _tied_topk()
    squared = mx.sym.elemwise_mul(ranked, ranked, name="squared")
    sym = mx.sym.exp(squared / 100, name="grown")
    # exp as expm1: wrong by 1 everywhere, also on MXNet's own inputs (a node after one
    # that parts through the tie).
    monkeypatch.setitem(codegen.EMITTERS, "exp", lambda n: (call("torch.expm1", n.args[0]), 1))
    with pytest.raises(AssertionError) as info:
        mxcompat.to_torch((sym, {}, {}), [(1, 20)])
    assert str(info.value) == (
        "mxcompat.to_torch: node 'grown' (op exp, in model) is the first whose output differs "
        "from MXNet's (grown_output): largest |difference| 1, max|mxnet| 37, computed from "
        "MXNet's own inputs; the nodes before it agree"
    )


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integers_divide_truncating_as_in_c(dtype):
    whole = mx.sym.Cast(DATA * 10, dtype=dtype)
    three = mx.sym.Cast(mx.sym.ones_like(DATA) * 3, dtype=dtype)
    outs = [
        mx.sym.broadcast_div(whole, three, name="by_array"),
        mx.sym.elemwise_div(whole, three, name="elementwise"),
        mx.sym.Cast(whole / 2.5, dtype="float32", name="by_scalar"),  # 2.5 read as 2
        mx.sym.broadcast_div(DATA, DATA * 0 + 4, name="floats"),
    ]
    sym = mx.sym.Group(outs)
    module = _no_warning(lambda: mxcompat.to_torch((sym, {}, {}), [(2, 6)]))
    x = np.array([[-0.95, -0.71, -0.35, -0.05, 0.05, 0.35], [0.71, 0.95, 0.5, -0.5, 0.25, 0]])
    want = [o.asnumpy() for o in sym.eval(ctx=mx.cpu(), data=mx.nd.array(x, dtype="float32"))]
    assert want[0].tolist() == [[-3, -2, -1, 0, 0, 1], [2, 3, 1, -1, 0, 0]]
    import torch

    with torch.no_grad():
        got = module(torch.from_numpy(x.astype(np.float32)))
    for g, w in zip(got, want):
        assert str(g.dtype) == "torch." + str(w.dtype)
        np.testing.assert_array_equal(g.numpy(), w)
