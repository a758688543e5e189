"""What NumPy gets from an NDArray: its numbers (``__array__``), on every NumPy.

MXNet 1.x's ``NDArray`` has no ``__array__``, so NumPy sees an opaque sequence: NumPy 1 builds
an *object* array from it, NumPy ≥ 2 refuses ("setting an array element with a sequence … exceed
the maximum number of dimensions"), and what is built on it goes wrong silently:
``mx.test_utils.same(a, b)`` and ``np.array_equal(a, b)`` return ``False`` for two equal
NDArrays.  Every user expects the numeric array ``a.asnumpy()`` gives, and that is what NumPy
gets with this patch (a copy: an NDArray lives in MXNet's memory, on any device).  Binary
operators between NumPy arrays and NDArrays are unchanged (MXNet's ``__array_priority__``
already gives NDArray the last word).

``x.astype(other_ndarray)`` (the dtype of another array) reads ``np.dtype(other)``, which NumPy
≥ 2.3 refuses because ``NDArray.dtype`` is a class (``np.float32``); the patch passes the
other array's dtype instead, as NumPy 1 read it.  Patch name ``ndarray_to_numpy``.
"""

from .._core.registry import Patch, Target, record, register

PATCH = "ndarray_to_numpy"


def __array__(self, dtype=None, copy=None):
    """The NDArray's numbers as a NumPy array (always a copy)."""
    if copy is False:
        raise ValueError(
            "an NDArray's data lives in MXNet's memory: NumPy can only get a "
            "copy of it (copy=False is impossible; mxcompat's ndarray_to_numpy)"
        )
    record(PATCH)
    out = self.asnumpy()
    return out if dtype is None or out.dtype == dtype else out.astype(dtype)


def _wrap_astype(wrapped, instance, args, kwargs):
    if args and _is_ndarray(args[0]):
        record(PATCH)
        args = (args[0].dtype,) + tuple(args[1:])
    elif _is_ndarray(kwargs.get("dtype")):
        record(PATCH)
        kwargs = dict(kwargs, dtype=kwargs["dtype"].dtype)
    return wrapped(*args, **kwargs)


def _is_ndarray(value):
    from mxnet.ndarray import NDArray

    return isinstance(value, NDArray)


register(
    Patch(
        PATCH,
        "NumPy gets an NDArray's numbers (__array__), so np.asarray, np.array_equal and "
        "mx.test_utils.same work on every NumPy; x.astype(other_ndarray) on NumPy >= 2.3.",
        targets=[
            Target("mxnet.ndarray.ndarray", "NDArray.__array__", new=__array__),
            Target("mxnet.ndarray.ndarray", "NDArray.astype", _wrap_astype),
        ],
    )
)
