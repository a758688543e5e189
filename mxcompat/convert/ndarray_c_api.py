"""Shape, dtype and context of NDArrays, and unallocated gradient buffers, read and made with
MXNet's C API directly.

A conversion asks this of every parameter (ResNet-50: 299 arrays, 193 gradients).  MXNet's
own ``shape``/``dtype``/``context`` properties and ``_new_alloc_handle`` build their ctypes
buffers and look up their tables on every call: 3.3 us per array read and 3.7 us per buffer
made, against 0.8 us and 1.9 us here (measured on MXNet 1.9.1), which is a third of what
``to_gluon(copy=False)`` adds to MXNet's own ``SymbolBlock``.

The calls (``MXNDArrayGetContext``, ``MXNDArrayGetDType``, ``MXNDArrayCreateEx`` and the shape
call of ``facts.NDARRAY_SHAPE_EX``) are the same in 1.3.1 ... 1.9.1.  Builds with 64-bit
tensor sizes (1.6+, ``INT64_TENSOR_SIZE``) take other shape types: there MXNet's own
properties are used (``_Properties``, the same answers, tested side by side).
"""

import ctypes

from .._core import facts
from .._core.conversion import import_mxnet


class _Properties:
    """The reference: MXNet's own properties and allocation."""

    def __init__(self):
        mx = import_mxnet()
        self._ndarray = mx.nd.NDArray
        self._new_alloc_handle = mx.nd.ndarray._new_alloc_handle

    def read(self, array):
        """``(shape, dtype, context)`` of ``array``."""
        return tuple(array.shape), array.dtype, array.context

    def contexts(self, arrays):
        return [a.context for a in arrays]

    def unallocated(self, shape, dtype, ctx):
        """An NDArray of ``shape`` and ``dtype`` on ``ctx`` whose memory MXNet allocates at
        its first use (``delay_alloc``, as the executors' own arrays): a gradient buffer of a
        model that only predicts costs neither time nor memory."""
        return self._ndarray(self._new_alloc_handle(shape, ctx, True, dtype))


class _Direct:
    """The same answers from one C call each.  One instance per conversion: its ctypes
    out-parameters are its own, as two threads converting at once must not share them.  What
    never changes in a process (the C functions, MXNet's tables) is looked up once, by the
    first reader: a conversion pays only for its out-parameters."""

    _shared = None  # the process's lookups, a dict made by the first reader

    def __init__(self):
        shared = _Direct._shared
        if shared is None:
            shared = _Direct._shared = self._lookups()
        self.__dict__.update(shared)
        dim = self._dim
        self._ndim, self._dims = dim(), ctypes.POINTER(dim)()
        self._code = ctypes.c_int()
        self._device_type, self._device_id = ctypes.c_int(), ctypes.c_int()
        self._ndim_ref, self._dims_ref = ctypes.byref(self._ndim), ctypes.byref(self._dims)
        self._code_ref = ctypes.byref(self._code)
        self._device_refs = ctypes.byref(self._device_type), ctypes.byref(self._device_id)
        self._known = {}  # (device type, id) -> Context, one object per device
        self._shapes = {}  # shape -> its mx_uint array, for buffers of equal shape

    @staticmethod
    def _lookups():
        mx = import_mxnet()
        lib = mx.base._LIB
        found = {
            "_check": mx.base.check_call,
            "_ndarray": mx.nd.NDArray,
            "_handle_type": mx.base.NDArrayHandle,
            "_dtypes": mx.nd.ndarray._DTYPE_MX_TO_NP,
            "_devices": mx.Context.devtype2str,
            "_context_class": mx.Context,
            "_get_context": lib.MXNDArrayGetContext,
            "_get_dtype": lib.MXNDArrayGetDType,
            "_create": lib.MXNDArrayCreateEx,
        }
        if facts.since(facts.NDARRAY_SHAPE_EX):
            found["_get_shape"], found["_dim"] = lib.MXNDArrayGetShapeEx, ctypes.c_int
        else:
            found["_get_shape"], found["_dim"] = lib.MXNDArrayGetShape, ctypes.c_uint
        # dtype -> MXNet's code, from MXNet's table (dtypes are what read() returns).
        found["_codes"] = {
            dtype: code for code, dtype in found["_dtypes"].items() if dtype is not None
        }
        return found

    def _failed(self):
        # Any non-zero return: MXNet's last error, raised as check_call raises it.
        self._check(-1)

    def _context(self, handle):
        if self._get_context(handle, *self._device_refs):
            self._failed()
        return self._device()

    def _device(self):
        """The Context of the device last read into the out-parameters."""
        key = (self._device_type.value, self._device_id.value)
        ctx = self._known.get(key)
        if ctx is None:
            ctx = self._known[key] = self._context_class(self._devices[key[0]], key[1])
        return ctx

    def read(self, array):
        handle = array.handle
        if (
            self._get_shape(handle, self._ndim_ref, self._dims_ref)
            or self._get_dtype(handle, self._code_ref)
            or self._get_context(handle, *self._device_refs)
        ):
            self._failed()
        ndim = self._ndim.value
        # -1: unknown shape (1.5+); an array holding a parameter's values always has one.
        shape = tuple(self._dims[:ndim]) if ndim >= 0 else None
        return shape, self._dtypes[self._code.value], self._device()

    def contexts(self, arrays):
        return [self._context(a.handle) for a in arrays]

    def unallocated(self, shape, dtype, ctx):
        """As ``_Properties.unallocated``."""
        code = self._codes.get(dtype)
        if code is None:  # a dtype read() did not give: MXNet's own table
            import numpy as np

            # Kept in the process's table: a name's code never changes either.
            code = self._codes[dtype] = import_mxnet().nd.ndarray._DTYPE_NP_TO_MX[
                np.dtype(dtype).type
            ]
        dims = self._shapes.get(shape)
        if dims is None:
            dims = self._shapes[shape] = (ctypes.c_uint * len(shape))(*shape)
        out = self._handle_type()
        if self._create(
            dims, len(shape), ctx.device_typeid, ctx.device_id, 1, code, ctypes.byref(out)
        ):
            self._failed()
        return self._ndarray(out)


def reader():
    """The reader for one conversion."""
    return _Properties() if facts.int64_tensor_size() else _Direct()
