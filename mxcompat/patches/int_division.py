"""An integer NDArray divided by zero raises ``ZeroDivisionError`` instead of killing Python.

On every MXNet 1.x release (``facts.INT_DIVISION_SIGFPE``) an integer division by 0 inside
MXNet's CPU kernels kills the process with SIGFPE: no exception, no traceback, no ``finally``
block, no checkpoint written.  Two ways in, both with integer arrays (int8, uint8, int32,
int64; bool divided by a scalar from 1.7):

* ``x / s``, ``x /= s``, ``mx.nd.divide(x, s)``: MXNet converts the scalar to the *array's*
  dtype before dividing, so ``int_array / 0.5`` (or ``/ 0``, ``/ -0.3``) divides by 0.  The
  conversion is the C++ one on x86-64, measured the same on every release: truncation toward
  0, and for the 8-bit types through a 32-bit integer whose low byte is kept (a value out of
  int32's range, NaN and infinities give INT32_MIN), so ``int8_array / 256.0`` divides by 0
  too, while ``int32_array / 1e10`` divides by INT32_MIN (no trap; left as MXNet computes it).
* ``x / y``, ``x /= y``, ``mx.nd.broadcast_div``, ``mx.nd.elemwise_div`` (sparse arrays
  too) where the divisor ``y`` has the same integer dtype and holds a 0.

mxcompat checks before calling into libmxnet and raises ``ZeroDivisionError`` (what Python
raises for ``1 // 0``; an ``ArithmeticError``) saying what MXNet would have done and how to
divide instead.  Everything MXNet does without dying is left as it is: ``%`` gives 0 for a 0
divisor, ``0.5 / x`` (``_rdiv_scalar``) does not trap, ``mx.np`` arrays (1.6+) divide
integers into float32, mixed dtypes are MXNet's own type error, and ``_div_scalar(...,
is_int=False)`` (1.7+) divides in floating point.

Cost: wrapt and one dtype lookup per division, no wait for the engine (about 1.5 us against
12-15 us for MXNet's own call on a small float array, MXNet 1.9.1).  Only an integer array
divided by an integer array is read back (it waits for the divisor to be computed) to look for
a 0.
Not covered: symbolic graphs (``mx.sym``, hybridized Gluon blocks, Module executors), whose
values exist only inside the engine.  Patch name ``int_division``.
"""

import functools
import math

from .._core import facts
from .._core.registry import Patch, Target, record, register
from .._core.util import bind_arguments

PATCH = "int_division"
DOC = (
    "An integer NDArray divided by zero raises ZeroDivisionError instead of killing the "
    "process with SIGFPE."
)


@functools.lru_cache(maxsize=None)
def _integer_types():
    # NDArray.dtype is a NumPy scalar type (np.int32), so a set lookup tells the kind without
    # building a np.dtype on every division.  Built at first use: importing mxcompat must not
    # import NumPy.
    import numpy as np

    types = frozenset((np.int8, np.uint8, np.int32, np.int64))
    return {
        "array": types,  # bool / bool is MXNet's own error, not a trap
        "scalar": (
            types | frozenset((np.bool_,)) if facts.since(facts.BOOL_SCALAR_DIVISION) else types
        ),
    }


def _integer_dtype(array, divided_by):
    """The array's dtype if it is one MXNet divides as integers ``divided_by`` a "scalar" or
    an "array", else ``None``."""
    dtype = getattr(array, "dtype", None)
    try:
        return dtype if dtype in _integer_types()[divided_by] else None
    except TypeError:  # an unhashable dtype attribute: not an NDArray of ours to check
        return None


def scalar_becomes_zero(scalar, dtype):
    """Whether MXNet's kernel divides an array of ``dtype`` by 0 when given ``scalar``."""
    import numpy as np

    try:
        value = float(scalar)
    except (TypeError, ValueError):
        return False  # MXNet rejects it in its own words
    kind = np.dtype(dtype)
    if kind.itemsize == 1 and kind.kind in "iu":
        if math.isfinite(value) and -(2**31) <= math.trunc(value) < 2**31:
            wide = math.trunc(value)
        else:
            wide = -(2**31)
        return wide % 256 == 0
    # 32 and 64 bits, and bool (divided as int64): only a truncation to 0 is 0.
    return -1.0 < value < 1.0


def _empty(array):
    # Not .size: sparse arrays do not implement it before 1.6.
    return 0 in array.shape


def _false(value):
    return str(value).strip().lower() in ("false", "0")


def _name(dtype):
    import numpy as np

    return np.dtype(dtype).name


def _wrap_div_scalar(wrapped, instance, args, kwargs):
    # _div_scalar(data, scalar, [is_int,] out=None, name=None, **kwargs): what `x / s` and
    # `x /= s` call.  A float array costs the dtype lookup only.
    dtype = _integer_dtype(args[0] if args else kwargs.get("data"), "scalar")
    if dtype is not None:
        bound = bind_arguments(wrapped, args, kwargs).arguments
        scalar = bound.get("scalar")
        is_int = bound.get("is_int", bound.get("kwargs", {}).get("is_int"))
        in_float = is_int is not None and _false(is_int) and facts.since(facts.DIV_SCALAR_IS_INT)
        if not in_float and not _empty(bound["data"]) and scalar_becomes_zero(scalar, dtype):
            record(PATCH)
            raise ZeroDivisionError(
                "mxcompat: %s NDArray / %r divides by zero: MXNet converts the scalar to the "
                "array's dtype (%s 0), and an integer division by 0 kills the process "
                "(SIGFPE). Divide a float copy instead: x.astype('float32') / %r"
                % (_name(dtype), scalar, _name(dtype), scalar)
            )
    return wrapped(*args, **kwargs)


def _wrap_div_arrays(wrapped, instance, args, kwargs):
    # broadcast_div / elemwise_div(lhs, rhs, out=None, ...): what `x / y` and `x /= y` call.
    lhs = args[0] if args else kwargs.get("lhs")
    dtype = _integer_dtype(lhs, "array")
    if dtype is not None:
        rhs = args[1] if len(args) > 1 else kwargs.get("rhs")
        # Other dtypes are MXNet's own type error.  An empty dividend divides nothing from
        # 1.6; 1.3 still divides by the divisor's 0.
        if (
            getattr(rhs, "dtype", None) == dtype
            and not _empty(rhs)
            and not (_empty(lhs) and facts.since(facts.EMPTY_DIVIDEND_RETURNS))
        ):
            divisor = rhs.asnumpy()
            if not divisor.all():
                import numpy as np

                where = tuple(int(i) for i in np.argwhere(divisor == 0)[0])
                record(PATCH)
                raise ZeroDivisionError(
                    "mxcompat: %s NDArray / %s NDArray divides by zero: the divisor holds 0 "
                    "at index %r, and an integer division by 0 kills the process (SIGFPE). "
                    "Divide float copies instead: x.astype('float32') / "
                    "y.astype('float32')" % (_name(dtype), _name(dtype), where)
                )
    return wrapped(*args, **kwargs)


def _targets():
    targets = []
    for name in facts.INT_DIVISION_SIGFPE["scalar"]:
        targets.append(Target("mxnet.ndarray._internal", name, _wrap_div_scalar))
    for name in facts.INT_DIVISION_SIGFPE["array"]:
        # Each name where MXNet binds it: mx.nd.broadcast_div and mx.nd.op.broadcast_div (one
        # object, bound twice), mx.nd.sparse's own; the aliases _div/_Div in _internal only.
        modules = (
            ("mxnet.ndarray._internal",)
            if name.startswith("_")
            else ("mxnet.ndarray", "mxnet.ndarray.op", "mxnet.ndarray.sparse")
        )
        for module in modules:
            targets.append(Target(module, name, _wrap_div_arrays))
    return targets


register(Patch(PATCH, DOC, targets=_targets()))
