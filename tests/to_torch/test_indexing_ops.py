"""to_torch on MXNet's indexing and sorting operators, each parameter against MXNet's own
executor in the same run (integer and index outputs equal, their types MXNet's; gradients
where MXNet has them): the shape as an array, slice_like, reverse, the modulo family (the
divisor's sign, 0 for a 0 divisor, integers and floats), gather_nd/scatter_nd, pick, one_hot,
topk/sort/argsort (ties in order of position).  Values MXNet refuses are refused."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat._core import facts
from tests.support.torch_ops import data, run_both

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)

A, B = mx.sym.var("a"), mx.sym.var("b")


# Before 1.7 MXNet's gather_nd reads -0.5 as row 0 (and -1 outside the array): to_torch's
# random inputs in [-1, 1) give such indices, and the negative ones are 1.7's.
_WRAPS = facts.since(facts.GATHER_ND_WRAPS_NEGATIVE)
needs_wrap = pytest.mark.skipif(not _WRAPS, reason="gather_nd wraps a negative index from 1.7")
int64_dtype = pytest.mark.skipif(
    not facts.since(facts.SORT_DTYPE_INT64), reason="topk/argsort take dtype int64 from 1.6"
)


# --- shapes and slices ------------------------------------------------------------------------


def test_shape_array_and_size_array_are_int64():
    x = data(2, 3, 4)
    for op in (mx.sym.shape_array, mx.sym.size_array):
        module = run_both(op(A), {"a": x}, grad=False)
        assert "mxops.%s" % op.__name__ in module.code


@pytest.mark.parametrize("axes", [(), (1,), (-1, 0), (2,)])
def test_slice_like(axes):
    sym = mx.sym.slice_like(A, B, axes=axes)
    run_both(sym, {"a": data(4, 5, 6), "b": data(2, 3, 4, seed=4)})


@pytest.mark.parametrize("axes", [(2, 3), (-3, 3)])
def test_slice_like_a_shape_of_other_rank(axes):
    # YOLOv3's offsets (1, 1, 128, 128, 2) sliced like its (batch, channels, h, w) output.
    sym = mx.sym.slice_like(A, B, axes=axes)
    run_both(sym, {"a": data(1, 1, 8, 9, 2), "b": data(2, 3, 4, 5, seed=4)})


@pytest.mark.parametrize("axis", [0, (0, 2), (1,), (2, 1, 0)])
@pytest.mark.parametrize("op", ["reverse", "flip"])
def test_reverse(axis, op):
    run_both(getattr(mx.sym, op)(A, axis=axis), {"a": data(2, 3, 4)}, exact=True)


def test_reverse_negative_axis_refused_as_mxnet_fails():
    with pytest.raises(NotImplementedError, match="'reverse'.*axis=\\(-1,\\)"):
        mxcompat.to_torch((mx.sym.reverse(A, axis=-1), {}, {}), {"a": (2, 3)})


# --- modulo -----------------------------------------------------------------------------------

_NUM = np.array([-7.5, -7, -3, -0.5, 0, 0.25, 3, 6, 7.25, -6], np.float32)
_DEN = np.array([3, -3, -3, 2, 0, -2, 0, 4, 2, -2.5], np.float32)


@pytest.mark.parametrize("op", ["broadcast_mod", "_mod", "_Mod"])
def test_mod_has_the_divisors_sign_and_0_for_0(op):
    fn = getattr(mx.sym, op, None) or getattr(mx.sym._internal, op)
    feed = {"a": _NUM.reshape(2, 5), "b": _DEN.reshape(2, 5)}
    module = run_both(fn(A, B), feed, exact=True)
    assert "mxops.mod" in module.code
    want = mx.nd.broadcast_mod(mx.nd.array(_NUM), mx.nd.array(_DEN)).asnumpy()
    with np.errstate(invalid="ignore"):
        assert not np.array_equal(want, np.fmod(_NUM, _DEN))  # (C's sign, NaN for 0)


def test_broadcast_mod_broadcasts_and_its_gradient_sums():
    feed = {"a": data(3, 4, low=-5, high=5), "b": np.array([[1.5, -2, 0.75, -1]], np.float32)}
    run_both(mx.sym.broadcast_mod(A, B), feed)


def test_float16_mod_and_its_gradient():
    sym = mx.sym.broadcast_mod(mx.sym.Cast(A, "float16"), mx.sym.Cast(B, "float16"))
    run_both(sym, {"a": _NUM, "b": _DEN}, rtol=1e-3)


@pytest.mark.parametrize("op", ["_ModScalar", "_RModScalar"])
def test_legacy_scalar_mod_names(op):
    run_both(getattr(mx.sym._internal, op)(A, scalar=2.5), {"a": _NUM}, exact=True)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_mod(dtype):
    num, den = (_NUM, _DEN) if dtype != "uint8" else (np.abs(_NUM), np.abs(_DEN))
    sym = mx.sym.broadcast_mod(mx.sym.Cast(A, dtype), mx.sym.Cast(B, dtype))
    run_both(sym, {"a": num, "b": den}, grad=False)


@pytest.mark.parametrize("scalar", [2.5, -2.5, 0.0, 3.0])
@pytest.mark.parametrize("reverse", [False, True])
def test_scalar_mod_float(scalar, reverse):
    sym = scalar % A if reverse else A % scalar
    run_both(sym, {"a": _NUM}, exact=True)


@pytest.mark.parametrize("scalar", [2.5, -2.5, 0.0, 3.0])
@pytest.mark.parametrize("reverse", [False, True])
def test_scalar_mod_integer_takes_the_scalar_in_the_arrays_type(scalar, reverse):
    x = mx.sym.Cast(A, "int32")
    sym = scalar % x if reverse else x % scalar
    run_both(sym, {"a": _NUM}, grad=False)


# --- gather, scatter, pick, one_hot -----------------------------------------------------------


@needs_wrap
def test_gather_nd_negative_and_fractional_indices():
    # MXNet adds the axis' size, then truncates: -0.5 is the last row.
    indices = np.array([[0, -1, 2, -0.5, 1.7], [3, 1, -4, 3, -0.5]], np.float32)
    module = run_both(mx.sym.gather_nd(A, B), {"a": data(3, 4, 5), "b": indices}, grad=False)
    assert "mxops.gather_nd" in module.code


def test_gather_nd_gradient_adds_up_repeated_places():
    # (MXNet's backward does not wrap a negative index, as its forward does: it adds the
    # gradient elsewhere, or outside the array.  Non-negative indices here.)
    indices = np.array([[0, 2, 2, 0, 1.7], [3, 1, 1, 3, 0]], np.float32)
    run_both(mx.sym.gather_nd(A, B), {"a": data(3, 4, 5), "b": indices}, verify=_WRAPS)


def test_gather_nd_every_axis():
    indices = np.array([[0, 2], [1, 3], [4, 0]], np.float32)
    run_both(mx.sym.gather_nd(A, B), {"a": data(3, 4, 5), "b": indices}, verify=_WRAPS)


def test_scatter_nd():
    indices = np.array([[0, 2, 1, 0], [1, 3, 0, 3]], np.float32)
    sym = mx.sym.scatter_nd(A, B, shape=(3, 4, 5))
    # (to_torch's random indices would repeat places: MXNet leaves which write wins open.)
    run_both(sym, {"a": data(4, 5), "b": indices}, verify=False, exact=True)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_pick(mode, keepdims, axis):
    x = data(2, 4, 3)
    shape = [2, 4, 3]
    shape[axis] = 1
    values = np.array([-1, 0, 1.9, 5, -5.5, 4, 2, -0.5, 3, 7, 1, 0], np.float32)
    index = values[: np.prod(shape)].reshape(
        [s for i, s in enumerate(shape) if s != 1 or i != axis % 3]
    )
    sym = mx.sym.pick(A, B, axis=axis, keepdims=keepdims, mode=mode)
    run_both(sym, {"a": x, "b": index}, exact=True)


def test_pick_axis_none_refused_as_mxnet_fails():
    with pytest.raises(NotImplementedError, match="'pick'.*axis=None"):
        mxcompat.to_torch((mx.sym.pick(A, B, axis=None), {}, {}), {"a": (2, 3), "b": (2,)})


@pytest.mark.parametrize(
    "depth,on,off,dtype",
    [(4, 1.0, 0.0, "float32"), (3, 2.5, -1.0, "float64"), (5, 7.9, -2.2, "int32")]
    + [(4, 1, 0, "uint8"), (4, 1, 0, "int8"), (2, 3, 1, "int64"), (4, 0.5, 0, "float16")],
)
def test_one_hot(depth, on, off, dtype):
    indices = np.array([[-1, 0, 2.7, 3], [5, 1, -0.5, 4]], np.float32)
    sym = mx.sym.one_hot(A, depth=depth, on_value=on, off_value=off, dtype=dtype)
    run_both(sym, {"a": indices}, grad=False, exact=True)


# --- sorting ----------------------------------------------------------------------------------

# Rows with ties (equal values come out in order of position, as MXNet's sort leaves rows of
# up to 16 elements) and one without.
_TIES = np.array([[1, 3, 3, 2, 3, 0, 2, 1], [5, 5, 5, 5, 4, 4, 6, -1]], np.float32)


@pytest.mark.parametrize("ret_typ", ["value", "indices", "mask", "both"])
@pytest.mark.parametrize("k", [1, 3, 0])
@pytest.mark.parametrize("axis", [-1, 0, None])
@pytest.mark.parametrize("is_ascend", [False, True])
def test_topk(ret_typ, k, axis, is_ascend):
    sym = mx.sym.topk(
        A, axis=axis, k=k if axis != 0 else min(k, 2), ret_typ=ret_typ, is_ascend=is_ascend
    )
    module = run_both(sym, {"a": _TIES}, exact=True)
    assert "mxops.topk" in module.code


@pytest.mark.parametrize(
    "dtype", ["int32", pytest.param("int64", marks=int64_dtype), "float16", "float64", "uint8"]
)
@pytest.mark.parametrize("ret_typ", ["indices", "both"])
def test_topk_index_dtype(dtype, ret_typ):
    sym = mx.sym.topk(A, k=2, ret_typ=ret_typ, dtype=dtype)
    run_both(sym, {"a": _TIES}, exact=True)


def test_topk_of_a_long_row_without_ties():
    # (k * 8 <= the row: MXNet's partial sort; its order among ties is unspecified there.)
    x = np.random.RandomState(5).permutation(40).reshape(2, 20).astype(np.float32)
    for ret_typ in ("value", "indices", "mask", "both"):
        run_both(mx.sym.topk(A, k=2, ret_typ=ret_typ), {"a": x}, exact=True)


@pytest.mark.parametrize("axis", [-1, 0, None])
@pytest.mark.parametrize("is_ascend", [True, False])
def test_sort(axis, is_ascend):
    run_both(mx.sym.sort(A, axis=axis, is_ascend=is_ascend), {"a": _TIES}, exact=True)


@pytest.mark.parametrize("axis", [-1, 0, None])
@pytest.mark.parametrize("is_ascend", [True, False])
@pytest.mark.parametrize(
    "dtype", ["float32", "int32", pytest.param("int64", marks=int64_dtype), "float16"]
)
def test_argsort(axis, is_ascend, dtype):
    sym = mx.sym.argsort(A, axis=axis, is_ascend=is_ascend, dtype=dtype)
    run_both(sym, {"a": _TIES}, exact=True)


# --- together ---------------------------------------------------------------------------------


def test_a_graph_of_them_reads_with_keywords_and_traces_with_fx():
    import torch

    x = mx.sym.contrib.BilinearResize2D(A, B, mode="like")
    x = mx.sym.contrib.AdaptiveAvgPooling2D(x, output_size=2)
    v, i = mx.sym.topk(mx.sym.flatten(x), k=3, ret_typ="both")
    first = mx.sym.reshape(mx.sym.slice_axis(i, axis=1, begin=0, end=1), shape=(-1,))
    y = mx.sym.broadcast_mul(v % 0.3, mx.sym.pick(v, first, axis=1, keepdims=True))
    sym = mx.sym.Group([y, mx.sym.shape_array(x), mx.sym.one_hot(i, depth=8)])
    module = mxcompat.to_torch((sym, {}, {}), {"a": (2, 3, 6, 7), "b": (1, 1, 9, 5)})
    for line in (
        'mxops.bilinear_resize2d(a, mode="like", like=b)',
        'mxops.topk(flatten0, k=3, ret_typ="both")',
        "mxops.pick(topk[0], reshape, axis=1, keepdims=True)",
        "mxops.one_hot(topk[1], 8)",
    ):
        assert line in module.code, line
    traced = torch.fx.symbolic_trace(module)
    a, b = torch.randn(2, 3, 6, 7), torch.randn(1, 1, 9, 5)
    assert all(torch.equal(p, q) for p, q in zip(traced(a, b), module(a, b)))
