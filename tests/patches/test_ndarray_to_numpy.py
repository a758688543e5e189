"""What NumPy gets from an NDArray (patch ``ndarray_to_numpy``)."""

import mxnet as mx  # noqa: E402  (after mxcompat)
import numpy as np
import pytest

import mxcompat
from mxcompat._core import facts

NUMPY_VERSION = facts.parse_version(np.__version__)[:2]
NUMPY2 = NUMPY_VERSION >= (2, 0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8"])
def test_numpy_gets_the_numbers(dtype):
    values = np.array([[1, 2, 3], [4, 5, 7]], dtype=dtype)
    a = mx.nd.array(values, dtype=dtype)
    got = np.asarray(a)
    assert type(got) is np.ndarray and got.dtype == np.dtype(dtype)
    assert got.tobytes() == values.tobytes() and got.shape == (2, 3)
    wide = np.asarray(a, dtype=np.float64)
    assert wide.dtype == np.float64 and wide.tolist() == values.astype(np.float64).tolist()
    # A copy: writing to it leaves the NDArray alone.
    got[0, 0] = 9
    assert a.asnumpy()[0, 0] == 1


def test_same_and_array_equal_compare_the_numbers():
    a, b, c = mx.nd.array([1, 2]), mx.nd.array([1, 2]), mx.nd.array([1, 3])
    assert mx.test_utils.same(a, b) is True and mx.test_utils.same(a, c) is False
    assert np.array_equal(a, b) is True and np.array_equal(a, c) is False
    np.testing.assert_array_equal(a, b)
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(a, c)


def test_sparse_arrays_give_their_dense_numbers():
    dense = np.array([[0, 1.5], [2.5, 0]], dtype=np.float32)
    csr = mx.nd.array(dense).tostype("csr")
    assert np.asarray(csr).tolist() == dense.tolist()


@pytest.mark.skipif(
    not NUMPY2, reason="copy=False is NumPy 2's keyword (this is NumPy %s)" % np.__version__
)
def test_no_copy_is_refused_clearly():
    with pytest.raises(ValueError, match="NumPy can only get a copy"):
        np.asarray(mx.nd.array([1, 2]), copy=False)


@pytest.mark.mxnet(">=1.6", reason="mx.np appears in 1.6")
def test_mx_np_arrays_too():
    x = mx.np.array([[1, 2], [3, 4]], dtype="float32")
    got = np.asarray(x)
    assert type(got) is np.ndarray and got.tolist() == [[1, 2], [3, 4]]


def test_astype_with_another_arrays_dtype():
    x = mx.nd.array([1.7, 2.2])
    y = x.astype(mx.nd.array([1], dtype="int32"))
    assert y.dtype == np.int32 and y.asnumpy().tolist() == [1, 2]
    assert x.astype(dtype=mx.nd.array([1], dtype="float16")).dtype == np.float16
    assert x.astype("int64").dtype == np.int64  # the ordinary way is untouched


def test_operators_between_numpy_and_ndarray_are_unchanged():
    # NDArray's __array_priority__ decides, with or without __array__.
    outcomes = []
    for state in ("patched", "unpatched"):
        if state == "unpatched":
            mxcompat.unpatch("ndarray_to_numpy")
        try:
            np.array([1.0, 2.0]) + mx.nd.array([1, 2])
        except TypeError as e:
            outcomes.append(str(e))
        finally:
            mxcompat.patch()
    assert len(outcomes) == 2 and outcomes[0] == outcomes[1]


def test_without_the_patch(unpatched):
    a, b = mx.nd.array([1, 2]), mx.nd.array([1, 2])
    assert not hasattr(mx.nd.NDArray, "__array__")
    if NUMPY_VERSION < (1, 24):
        # NumPy 1.14 … 1.23: an object array of NDArrays, compared element by element.
        assert np.asarray(a).dtype == object and mx.test_utils.same(a, b) is True
        return
    # NumPy >= 1.24 refuses the sequence, and equal arrays compare unequal, silently.
    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        np.asarray(a)
    assert mx.test_utils.same(a, b) is False
