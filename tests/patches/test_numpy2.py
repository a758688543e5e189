"""Patch ``numpy2``: MXNet on NumPy 2.x as on NumPy 1 (NEP 51 parameter strings, NEP 50
metric sums, ``tostring`` for recordio, a 1-element array as ``while_loop``'s
``max_iterations``), and every place MXNet's Python code makes a Python scalar, reviewed.
"""

import sys

import mxnet as mx
import numpy as np
import pytest

from mxcompat._core import facts
from mxcompat.patches import numpy2
from tests.support import mxnet_numpy_uses, mxnet_scalar_conversions

NUMPY_VERSION = facts.parse_version(np.__version__)[:2]
NUMPY2 = NUMPY_VERSION >= (2, 0)
needs_numpy2 = pytest.mark.skipif(
    not NUMPY2, reason="NEP 50/51 behaviour needs NumPy >= 2 (this is NumPy %s)" % np.__version__
)


# --- NEP 51: parameter strings ------------------------------------------------------------------


def test_legacy_str_writes_containers_as_numpy_1():
    value = [np.int64(1), (np.float32(0.5),), np.str_("a"), np.True_, 2, "b"]
    assert numpy2.legacy_str(value) == "[1, (0.5,), 'a', True, 2, 'b']"
    assert numpy2.legacy_str((np.int32(3), np.int64(4))) == "(3, 4)"
    assert numpy2.legacy_str((1, 2)) == "(1, 2)"
    assert numpy2.legacy_str(np.float32(0.1)) == str(np.float32(0.1))


def _param_cases():
    i1, i3 = np.int64(1), np.int64(3)
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    return [
        (
            "reshape",
            lambda: mx.nd.reshape(x, shape=(np.int64(4), np.int64(3))),
            np.arange(12).reshape(4, 3),
        ),
        ("ones", lambda: mx.nd.ones((np.int64(2), 3)), np.ones((2, 3))),
        (
            "transpose",
            lambda: mx.nd.transpose(x, axes=(i1, np.int64(0))),
            np.arange(12).reshape(3, 4).T,
        ),
        ("sum", lambda: mx.nd.sum(x, axis=(np.int64(0),)), np.arange(12).reshape(3, 4).sum(0)),
        (
            "slice",
            lambda: mx.nd.slice(x, begin=(i1, 0), end=(i3, np.int64(2))),
            np.arange(12).reshape(3, 4)[1:3, 0:2],
        ),
    ]


@pytest.mark.parametrize("case", [c[0] for c in _param_cases()])
def test_numpy_ints_in_operator_parameters(case):
    _, fn, want = [c for c in _param_cases() if c[0] == case][0]
    assert np.array_equal(fn().asnumpy(), want.astype(np.float32))


@needs_numpy2
def test_numpy_ints_in_parameters_fail_without_mxcompat(unpatched):
    x = mx.nd.array(np.arange(12, dtype=np.float32))
    with pytest.raises(mx.base.MXNetError) as info:
        mx.nd.reshape(x, shape=(np.int64(3), np.int64(4))).wait_to_read()
    assert "np.int64(3)" in str(info.value)


def test_symbol_var_shape_and_attrs_with_numpy_ints():
    v = mx.sym.var("v", shape=(np.int64(2), np.int64(3)), __extra__=(np.int64(5),))
    assert v.attr("__shape__") == "(2, 3)"
    assert v.attr("__extra__") == "(5,)"
    assert v.infer_shape()[1] == [(2, 3)]


def test_symbol_operator_parameters_with_numpy_ints():
    data = mx.sym.var("data")
    out = mx.sym.reshape(data, shape=(np.int64(-1), np.int64(2)))
    exe = out.bind(mx.cpu(), {"data": mx.nd.arange(6)})
    assert exe.forward()[0].shape == (3, 2)


def test_hybridized_net_with_numpy_shapes():
    from mxnet import gluon

    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(np.int64(3), in_units=np.int64(4)))
    net.initialize(mx.init.One())
    net.hybridize(static_alloc=True, static_shape=True)
    out = net(mx.nd.ones((2, 4)))
    assert np.array_equal(out.asnumpy(), np.full((2, 3), 4.0, dtype=np.float32))


def test_io_iterator_with_numpy_shape(tmp_path):
    path = str(tmp_path / "d.csv")
    np.savetxt(path, np.arange(12, dtype=np.float32).reshape(4, 3), delimiter=",")
    it = mx.io.CSVIter(data_csv=path, data_shape=(np.int64(3),), batch_size=np.int64(2))
    batch = next(iter(it))
    assert np.array_equal(batch.data[0].asnumpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


@pytest.mark.mxnet(">=1.6", reason="mx.np and npx.set_np appear in 1.6")
def test_split_data_on_numpy_batch_in_np_mode():
    from mxnet import gluon

    mx.npx.set_np()
    try:
        data = mx.np.array(np.arange(14, dtype=np.float32).reshape(7, 2))
        parts = gluon.utils.split_data(data, 3, even_split=False)
        # 1.6.0 puts the remainder last, 1.7+ first.
        assert sorted(p.shape for p in parts) == [(2, 2), (2, 2), (3, 2)]
        assert np.array_equal(mx.np.concatenate(parts).asnumpy(), data.asnumpy())
    finally:
        mx.npx.reset_np()


# --- NEP 50: metric sums ------------------------------------------------------------------------


def _accumulate_mse(m):
    """Five updates of the metric ``m``; what NumPy 1 sums them to."""
    want = 0.0
    for i in range(5):
        label = np.sin(np.arange(4) + i).astype(np.float32)
        pred = np.cos(np.arange(4) * 0.3 + i).astype(np.float32)
        m.update([mx.nd.array(label)], [mx.nd.array(pred)])
        # NumPy 1: the Python 0.0 seed promotes the float32 mean to float64 once.
        want = np.float64(want) + ((label - pred) ** 2.0).mean()
    return want


def test_metric_sums_accumulate_as_numpy_1():
    m = mx.metric.MSE()
    want = _accumulate_mse(m)
    name, value = m.get()
    assert type(m.sum_metric) is np.float64
    assert value == want / 5


def test_metric_sum_types_are_numpy_1s():
    # F1 sums NumPy float64 scores: np.float64 under NumPy 1.23.5 (every release), and so
    # with mxcompat on NumPy 2.  Exact types: np.float64 would also pass an isinstance(float).
    m = mx.metric.F1()
    m.update(
        [mx.nd.array([0, 1, 1, 0])], [mx.nd.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]])]
    )
    assert type(m.sum_metric) is np.float64
    assert type(m.get()[1]) is np.float64


@pytest.mark.mxnet("<1.4", reason="1.4+ compute the clipping scale with NDArrays")
def test_clip_global_norm_scale_as_numpy_1():
    from mxnet import gluon

    # A norm whose float32 (NEP 50) and float64 (NumPy 1) scales give different multipliers.
    for i in range(2000):
        value = np.float32(2.5 + i * 0.0007)
        norm = np.sqrt(np.float32(value * value))
        scale64 = 0.5 / (np.float64(norm) + 1e-8)
        scale32 = np.float32(0.5) / (norm + np.float32(1e-8))
        if np.float32(scale64) != np.float32(scale32):
            break
    else:
        pytest.fail("no norm separates the float32 and float64 scales")
    arr = mx.nd.array([value])
    got_norm = gluon.utils.clip_global_norm([arr], 0.5)
    assert got_norm == norm
    assert arr.asnumpy()[0] == np.float32(value) * np.float32(scale64)


needs_no_tostring = pytest.mark.skipif(
    hasattr(np.ndarray, "tostring"),
    reason="NumPy %s still has ndarray.tostring (removed in 2.3)" % np.__version__,
)


@needs_no_tostring
def test_recordio_pack_fails_without_mxcompat(unpatched):
    header = mx.recordio.IRHeader(0, [1.5, 2.0], 7, 0)
    with pytest.raises(AttributeError) as info:
        mx.recordio.pack(header, b"payload")
    assert "tostring" in str(info.value)


def test_recordio_pack_array_label_in_threads():
    # The label's bytes come first, flag counts them, label is 0: unpack reads them back.
    import threading

    results = {}

    def pack(i):
        header = mx.recordio.IRHeader(0, np.arange(i + 1, dtype=np.float64) + 0.5, i, 0)
        results[i] = mx.recordio.unpack(mx.recordio.pack(header, b"payload%d" % i))

    threads = [threading.Thread(target=pack, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        header, payload = results[i]
        assert (header.flag, header.id, payload) == (i + 1, i, b"payload%d" % i)
        assert header.label.dtype == np.float32
        assert header.label.tolist() == [k + 0.5 for k in range(i + 1)]
    assert mx.recordio.np is np  # MXNet's module is never changed


def test_recordio_pack_img_round_trip():
    cv2 = getattr(mx.recordio, "cv2", None)
    if cv2 is None:
        pytest.skip(
            "mx.recordio.pack_img needs OpenCV, which this env lacks (the numpy24 "
            "envs install opencv-python-headless)"
        )
    img = (np.arange(4 * 5 * 3) * 7 % 256).astype(np.uint8).reshape(4, 5, 3)
    header = mx.recordio.IRHeader(0, [1.5, 2.0], 7, 0)
    packed = mx.recordio.pack_img(header, img, quality=3, img_fmt=".png")
    ok, png = cv2.imencode(".png", img, [cv2.IMWRITE_PNG_COMPRESSION, 3])
    assert ok
    assert packed == mx.recordio.pack(header, png.tobytes())
    got_header, got_img = mx.recordio.unpack_img(packed)
    assert (got_header.flag, got_header.id, got_header.label.tolist()) == (2, 7, [1.5, 2.0])
    assert got_img.dtype == np.uint8 and np.array_equal(got_img, img)
    assert mx.recordio.cv2 is cv2


@needs_no_tostring
def test_recordio_pack_img_fails_without_mxcompat(unpatched):
    cv2 = getattr(mx.recordio, "cv2", None)
    if cv2 is None:
        pytest.skip(
            "mx.recordio.pack_img needs OpenCV, which this env lacks (the numpy24 "
            "envs install opencv-python-headless)"
        )
    with pytest.raises(AttributeError) as info:
        mx.recordio.pack_img(
            mx.recordio.IRHeader(0, 1.0, 7, 0), np.zeros((2, 2, 3), dtype=np.uint8), img_fmt=".png"
        )
    assert "tostring" in str(info.value)


def test_metric_copies_sum_as_numpy_1():
    # A deepcopy of a fresh metric (MXNet 1.9.1's test_metric does this) sums as the original:
    # through float64, as NumPy 1 did, on every NumPy.
    import copy

    for make in (copy.copy, copy.deepcopy):
        m = make(mx.metric.MSE())
        want = _accumulate_mse(m)
        assert type(m.sum_metric) is np.float64
        if hasattr(m, "global_sum_metric"):  # MXNet 1.6+
            assert type(m.global_sum_metric) is np.float64
        assert m.get()[1] == want / 5


def test_metric_seed_pickles_as_float():
    import pickle

    m = mx.metric.MSE()
    assert type(pickle.loads(pickle.dumps(m.sum_metric))) is float


# --- NumPy 2.4: no Python scalar from a 1-element array (while_loop's max_iterations) --------

needs_numpy24 = pytest.mark.skipif(
    NUMPY_VERSION < facts.NUMPY_REFUSES_SCALAR_OF_1_ELEMENT_ARRAY,
    reason="int() of a 1-element array with ndim > 0 works up to NumPy 2.3 (this is NumPy %s)"
    % np.__version__,
)


def _count_loop(front, limit):
    # Counts i from 0 while i < 100: the limit alone ends the loop, so every output row is set.
    outs, states = front.contrib.while_loop(
        lambda i: i < 100,
        lambda i: ([i * 2], [i + 1]),
        [mx.nd.array([0]) if front is mx.nd else mx.sym.var("i")],
        max_iterations=limit,
    )
    if front is mx.sym:
        exe = mx.sym.Group(list(outs) + list(states)).bind(mx.cpu(), {"i": mx.nd.array([0])})
        outs, states = exe.forward()[:1], exe.forward()[1:]
    return outs[0].asnumpy().ravel().tolist(), states[0].asnumpy().tolist()


@pytest.mark.parametrize("front", ["nd", "sym"])
def test_while_loop_max_iterations_as_numpy_array(front):
    front = getattr(mx, front)
    assert _count_loop(front, np.array([3])) == ([0.0, 2.0, 4.0], [3.0])
    assert _count_loop(front, np.array([[2]], dtype=np.int32)) == ([0.0, 2.0], [2.0])
    assert _count_loop(front, np.array([3.7])) == ([0.0, 2.0, 4.0], [3.0])  # int() truncates
    assert _count_loop(front, 4) == ([0.0, 2.0, 4.0, 6.0], [4.0])


@needs_numpy24
@pytest.mark.parametrize("front", ["nd", "sym"])
def test_while_loop_max_iterations_array_fails_without_mxcompat(unpatched, front):
    with pytest.raises(ValueError, match="Cannot convert max_iteration to python int") as info:
        _count_loop(getattr(mx, front), np.array([3]))
    cause = info.value.__context__
    assert isinstance(cause, TypeError)
    assert str(cause) == "only 0-dimensional arrays can be converted to Python scalars"


# --- every place MXNet's Python code makes a Python scalar, reviewed -------------------------

# What each candidate of the scan (mxnet_scalar_conversions) gets on NumPy >= 2.4, which
# refuses int()/float() of an array with ndim > 0 (each checked by running it on 1.9.1 and
# 1.5.1 with NumPy 2.5.5 against NumPy 1.23.5).
FIXED = "a 1-element array MXNet documents as accepted: broken, fixed by numpy2"
SCALAR = "a Python number or NumPy scalar from MXNet itself (indexing, reduction, asscalar)"
GUARDED = "reached only for numeric_types (scalars); arrays take another branch"
SHAPE = "np.prod of a shape, len(): 0-d results"
MESSAGE = "%-formatting of names, shapes, counts or NumPy scalars in a message"
CALLER = "the caller's value, documented as a Python number or bool (not MXNet's to convert)"

# (file, function, call) -> verdict; the comment names the releases (1.3.1 … 1.9.1) with it.
SCALAR_CONVERSIONS = {
    (
        "mxnet/contrib/quantization.py",
        "_get_optimal_threshold",
        "'get_optimal_threshold only supports input type of NDArray, list of NDArrays and np.ndarray, while received type=%s' % str(type(arr))",  # noqa: E501
    ): MESSAGE,  # 1.3-1.5
    (
        "mxnet/contrib/quantization.py",
        "_get_optimal_threshold",
        "float(quantized_bins[j])",
    ): SCALAR,  # 1.3-1.5
    (
        "mxnet/contrib/quantization.py",
        "collect",
        "'Collecting layer %s histogram of shape %s' % (name, arr.shape)",
    ): MESSAGE,  # 1.6-1.9
    (
        "mxnet/contrib/quantization.py",
        "collect",
        "'Collecting layer %s min_range=%f, max_range=%f' % (name, min_range, max_range)",
    ): MESSAGE,  # 1.5-1.9
    (
        "mxnet/contrib/quantization.py",
        "collect",
        "'Collecting layer %s output min_range=%f, max_range=%f' % (name, min_range, max_range)",
    ): MESSAGE,  # 1.3-1.4
    ("mxnet/contrib/tensorrt.py", "set_use_fp16", "int(status)"): CALLER,  # 1.5-1.7
    ("mxnet/contrib/tensorrt.py", "set_use_tensorrt", "int(status)"): CALLER,  # 1.3-1.4
    ("mxnet/executor.py", "forward", "int(is_train)"): CALLER,  # 1.3-1.9
    ("mxnet/executor.py", "reshape", "int(allow_up_sizing)"): CALLER,  # 1.3-1.9
    ("mxnet/executor.py", "reshape", "int(partial_shaping)"): CALLER,  # 1.3-1.9
    ("mxnet/gluon/contrib/nn/basic_layers.py", "__init__", "int(factor)"): CALLER,  # 1.5-1.9
    ("mxnet/gluon/data/dataloader.py", "__init__", "int(prefetch)"): CALLER,  # 1.4-1.9
    (
        "mxnet/gluon/data/dataset.py",
        "__init__",
        "'All arrays must have the same length; array[0] has length %d while array[%d] has %d.' % (self._length, i + 1, len(data))",  # noqa: E501
    ): MESSAGE,  # 1.3-1.9
    ("mxnet/image/detection.py", "_check_satisfy_constraints", "float(xmax)"): SCALAR,  # 1.3-1.9
    ("mxnet/image/detection.py", "_check_satisfy_constraints", "float(xmin)"): SCALAR,  # 1.3-1.9
    ("mxnet/image/detection.py", "_check_satisfy_constraints", "float(ymax)"): SCALAR,  # 1.3-1.9
    ("mxnet/image/detection.py", "_check_satisfy_constraints", "float(ymin)"): SCALAR,  # 1.3-1.9
    (
        "mxnet/image/image.py",
        "random_size_crop",
        "int(round(np.sqrt(target_area * new_ratio)))",
    ): SCALAR,  # 1.3-1.9
    (
        "mxnet/image/image.py",
        "random_size_crop",
        "int(round(np.sqrt(target_area / new_ratio)))",
    ): SCALAR,  # 1.3-1.9
    (
        "mxnet/image/image.py",
        "random_size_crop",
        "round(np.sqrt(target_area * new_ratio))",
    ): SCALAR,  # 1.3-1.9
    (
        "mxnet/image/image.py",
        "random_size_crop",
        "round(np.sqrt(target_area / new_ratio))",
    ): SCALAR,  # 1.3-1.9
    ("mxnet/initializer.py", "__init__", "float(magnitude)"): CALLER,  # 1.3-1.9
    ("mxnet/initializer.py", "_init_bilinear", "range(np.prod(shape))"): SHAPE,  # 1.3-1.9
    ("mxnet/initializer.py", "_init_weight", "range(np.prod(shape))"): SHAPE,  # 1.3-1.9
    ("mxnet/lr_scheduler.py", "__call__", "float(num_update)"): SCALAR,  # 1.3
    ("mxnet/lr_scheduler.py", "get_warmup_lr", "float(num_update)"): SCALAR,  # 1.4-1.9
    ("mxnet/ndarray/contrib.py", "_to_python_scalar", "type_(inputs)"): FIXED,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "__iadd__", "float(other)"): GUARDED,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "__idiv__", "float(other)"): GUARDED,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "__imod__", "float(other)"): GUARDED,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "__imul__", "float(other)"): GUARDED,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "__isub__", "float(other)"): GUARDED,  # 1.3-1.9
    (
        "mxnet/ndarray/ndarray.py",
        "__repr__",
        "'\\n%s\\n<%s %s @%s>' % (str(self.asnumpy()), self.__class__.__name__, shape_info, self.context)",  # noqa: E501
    ): MESSAGE,  # 1.3-1.6
    (
        "mxnet/ndarray/ndarray.py",
        "__repr__",
        "'\\n%s\\n<%s %s @%s>' % (str(self.asnumpy()), self.__class__.__name__, shape_info, self.ctx)",  # noqa: E501
    ): MESSAGE,  # 1.7-1.9
    (
        "mxnet/ndarray/ndarray.py",
        "_new_alloc_handle",
        "int(_DTYPE_NP_TO_MX[dtype_type])",
    ): SCALAR,  # 1.7-1.9
    (
        "mxnet/ndarray/ndarray.py",
        "_new_alloc_handle",
        "int(_DTYPE_NP_TO_MX[np.dtype(dtype).type])",
    ): SCALAR,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "_new_alloc_handle", "int(delay_alloc)"): SCALAR,  # 1.3-1.9
    (
        "mxnet/ndarray/ndarray.py",
        "_new_from_shared_mem",
        "int(_DTYPE_NP_TO_MX[np.dtype(dtype).type])",
    ): SCALAR,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "_set_nd_basic_indexing", "float(value)"): GUARDED,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "_set_nd_basic_indexing", "int(value)"): GUARDED,  # 1.7-1.9
    (
        "mxnet/ndarray/ndarray.py",
        "_sync_copyfrom",
        "'Shape inconsistent: expected %s vs got %s' % (str(self.shape), str(source_array.shape))",
    ): MESSAGE,  # 1.3
    (
        "mxnet/ndarray/ndarray.py",
        "_sync_copyfrom",
        "'Shape inconsistent: expected %s vs got %s' % (str(source_array.shape), str(self.shape))",
    ): MESSAGE,  # 1.4-1.9
    ("mxnet/ndarray/ndarray.py", "_ufunc_helper", "float(lhs)"): GUARDED,  # 1.3-1.9
    ("mxnet/ndarray/ndarray.py", "_ufunc_helper", "float(rhs)"): GUARDED,  # 1.3-1.9
    (
        "mxnet/ndarray/ndarray.py",
        "indexing_key_expand_implicit_axes",
        "int(idx.item())",
    ): SCALAR,  # 1.7-1.9
    ("mxnet/ndarray/ndarray.py", "moveaxis", "'Got %d' % destination"): MESSAGE,  # 1.5-1.9
    (
        "mxnet/ndarray/ndarray.py",
        "moveaxis",
        "'Source should verify 0 <= source < tensor.ndimGot %d' % source",
    ): MESSAGE,  # 1.5-1.9
    ("mxnet/ndarray/sparse.py", "__setitem__", "float(value)"): GUARDED,  # 1.3-1.9
    (
        "mxnet/ndarray/sparse.py",
        "_new_alloc_handle",
        "int(_DTYPE_NP_TO_MX[np.dtype(aux_t).type])",
    ): SCALAR,  # 1.3-1.9
    (
        "mxnet/ndarray/sparse.py",
        "_new_alloc_handle",
        "int(_DTYPE_NP_TO_MX[np.dtype(dtype).type])",
    ): SCALAR,  # 1.3-1.9
    ("mxnet/ndarray/sparse.py", "_new_alloc_handle", "int(delay_alloc)"): SCALAR,  # 1.3-1.9
    ("mxnet/optimizer.py", "_get_lbmult", "float(nup)"): SCALAR,  # 1.3
    ("mxnet/optimizer/optimizer.py", "_get_lbmult", "float(nup)"): SCALAR,  # 1.4-1.9
    ("mxnet/profiler.py", "decrement", "int(delta)"): CALLER,  # 1.3-1.9
    ("mxnet/profiler.py", "increment", "int(delta)"): CALLER,  # 1.3-1.9
    ("mxnet/profiler.py", "set_value", "int(value)"): CALLER,  # 1.3-1.9
    ("mxnet/random.py", "seed", "int(seed_state)"): CALLER,  # 1.5-1.9
    ("mxnet/rnn/io.py", "__init__", "range(len(buckets))"): SHAPE,  # 1.3-1.9
    (
        "mxnet/space.py",
        "__len__",
        "int(_np.prod([len(x) for x in self.space_map.values()]))",
    ): SHAPE,  # 1.6-1.9
    ("mxnet/symbol/contrib.py", "_to_python_scalar", "type_(inputs)"): FIXED,  # 1.3-1.9
    ("mxnet/symbol/symbol.py", "full", "float(val)"): CALLER,  # 1.3-1.9
    ("mxnet/symbol/symbol.py", "simple_bind", "'%s: %s\\n' % (k, v)"): MESSAGE,  # 1.3-1.9
    (
        "mxnet/test_utils.py",
        "_parse_aux_states",
        "'Symbol aux_states names and given aux_states do not match.symbol aux_names:%s, aux_states.keys:%s' % (str(set(sym.list_auxiliary_states())), str(set(aux_states.keys())))",  # noqa: E501
    ): MESSAGE,  # 1.5-1.9
    (
        "mxnet/test_utils.py",
        "_parse_location",
        "'Symbol arguments and keys of the given location do not match.symbol args:%s, location.keys():%s' % (str(set(sym.list_arguments())), str(set(location.keys())))",  # noqa: E501
    ): MESSAGE,  # 1.3-1.9
    (
        "mxnet/test_utils.py",
        "assert_almost_equal",
        "'%3d: Error %f  %s' % (i, rel, locationError(a, b, index, names))",
    ): MESSAGE,  # 1.6-1.9
    (
        "mxnet/test_utils.py",
        "assert_almost_equal",
        "'Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %s%f%%).\\n%s' % (relErr, rtol, atol, mismatchDegree, 100 * i / a.size, locationError(a, b, indexErr, names, maxError=True))",  # noqa: E501
    ): MESSAGE,  # 1.6-1.9
    (
        "mxnet/test_utils.py",
        "assert_almost_equal",
        "'Location of %serror: %s, %s=%.8f, %s=%.8f' % (maximum, str(index), names[0], a[index], names[1], b[index])",  # noqa: E501
    ): MESSAGE,  # 1.6
    (
        "mxnet/test_utils.py",
        "assert_almost_equal_with_err",
        "'%3d: Error %f  %s' % (i, rel, locationError(a, b, index, names))",
    ): MESSAGE,  # 1.7-1.9
    (
        "mxnet/test_utils.py",
        "assert_almost_equal_with_err",
        "'Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %s%f%%).\\n%s' % (relErr, rtol, atol, mismatchDegree, 100 * i / a.size, locationError(a, b, indexErr, names, maxError=True))",  # noqa: E501
    ): MESSAGE,  # 1.7-1.9
    (
        "mxnet/test_utils.py",
        "assert_almost_equal_with_err",
        "'Error %f exceeds tolerance rtol=%f, atol=%f, etol=%f. Error_rate=%f. Location of maximum error:%s, a=%f, b=%f' % (rel, rtol, atol, etol, err, str(index), a[index], b[index])",  # noqa: E501
    ): MESSAGE,  # 1.5-1.6
    (
        "mxnet/test_utils.py",
        "check_consistency",
        "'Predict Err: ctx %d vs ctx %d at %s' % (i, gt_idx, name)",
    ): MESSAGE,  # 1.8-1.9
    (
        "mxnet/test_utils.py",
        "check_consistency",
        "'Predict Err: ctx %d vs ctx %d at %s' % (i, max_idx, name)",
    ): MESSAGE,  # 1.3-1.7
    (
        "mxnet/test_utils.py",
        "check_consistency",
        "'Train Err: ctx %d vs ctx %d at %s' % (i, max_idx, name)",
    ): MESSAGE,  # 1.3-1.7
    (
        "mxnet/test_utils.py",
        "check_speed",
        "'Expect dict, get \"location\"=%s' % str(location)",
    ): MESSAGE,  # 1.3-1.9
    ("mxnet/test_utils.py", "gen_buckets_probs_with_ppf", "float(nbuckets)"): CALLER,  # 1.3-1.9
    (
        "mxnet/test_utils.py",
        "new_matrix_with_real_eigvals_nd",
        "int(np.prod(shape[:-2]))",
    ): SHAPE,  # 1.7-1.9
    ("mxnet/test_utils.py", "new_matrix_with_real_eigvals_nd", "range(n)"): SHAPE,  # 1.7-1.9
    (
        "mxnet/test_utils.py",
        "new_sym_matrix_with_real_eigvals_nd",
        "int(np.prod(shape[:-2]))",
    ): SHAPE,  # 1.7-1.9
    ("mxnet/test_utils.py", "new_sym_matrix_with_real_eigvals_nd", "range(n)"): SHAPE,  # 1.7-1.9
    ("mxnet/test_utils.py", "numeric_grad", "int(np.prod(v.shape))"): SHAPE,  # 1.6-1.9
    ("mxnet/test_utils.py", "numeric_grad", "range(int(np.prod(v.shape)))"): SHAPE,  # 1.6-1.9
    ("mxnet/test_utils.py", "numeric_grad", "range(np.prod(v.shape))"): SHAPE,  # 1.3-1.5
}


@pytest.mark.skipif(
    sys.version_info < (3, 9),
    reason="the scan needs ast.unparse (Python 3.9+); "
    "every release is scanned by its Python 3.12/3.13 envs",
)
def test_every_scalar_conversion_in_mxnet_is_reviewed():
    found = mxnet_scalar_conversions.scan(mxnet_numpy_uses.mxnet_dir())
    assert len(found) > 40, "the scan found too few conversions in MXNet %s" % mx.__version__
    new = [repr(found[key]) for key in sorted(found) if key not in SCALAR_CONVERSIONS]
    assert not new, (
        "MXNet %s converts to Python scalars where nobody looked (NumPy >= 2.4 "
        "refuses 1-element arrays): %s" % (mx.__version__, "; ".join(new))
    )
    fixed = sorted(
        key[0] for key, verdict in SCALAR_CONVERSIONS.items() if verdict is FIXED and key in found
    )
    assert fixed == ["mxnet/ndarray/contrib.py", "mxnet/symbol/contrib.py"]
