"""The dtype name ``"bfloat16"`` works in every MXNet operator, with or without ml_dtypes.

MXNet 1.7 brought bfloat16 arrays (``facts.NDARRAY_BFLOAT16``), and its operators take
``dtype="bfloat16"`` (``mx.nd.amp_cast``, ``Cast``, ``zeros``, ``mx.sym.amp_cast``...).  But
every generated operator function (``mxnet/ndarray/register.py``, ``mxnet/symbol/register.py``,
every release) reads its ``dtype`` argument with ``numpy.dtype(dtype)`` and hands the C++ core
its ``.names[0]`` (MXNet's own structured bfloat16) or its ``.name``, and NumPy knows the name
``"bfloat16"`` only once ml_dtypes has registered its type.  MXNet imports ml_dtypes only by
the way: its ONNX exporter (``contrib.onnx``) imports onnx at ``import mxnet`` where onnx is
installed, and onnx (1.23: ``ml_dtypes>=0.5.4``) imports ml_dtypes; seen on 1.7.0.post2,
1.8.0.post0 and 1.9.1.  The same line thus computes on a machine with onnx and raises
``TypeError: data type 'bfloat16' not understood`` on the next, on NumPy 1.23 and 2.x alike.

mxcompat gives those two modules (their global ``_np``) a NumPy whose ``dtype`` reads the string
``"bfloat16"`` as ml_dtypes' dtype reads there: no fields, the name ``bfloat16``; every other
argument goes to NumPy's own ``dtype``.  Each operator then hands MXNet's core the same
parameter, ``dtype='bfloat16'``, whether ml_dtypes is loaded or not, and computes the same bits
(``amp_cast`` rounds float32 to the nearest bfloat16, ties to even; ``Cast`` truncates).  NumPy
itself is not changed (``numpy.dtype("bfloat16")`` still fails without ml_dtypes), nor is any
other MXNet function: ``NDArray.astype``, ``mx.nd.array``, ``mx.nd.empty``/``full`` and
``mx.sym.var`` map a dtype to MXNet's type flag in Python and fail on the name with ml_dtypes
too (``KeyError``: ml_dtypes' type is not MXNet's); they want MXNet's own dtype,
``np.dtype([("bfloat16", np.uint16)])``.  ``mx.np`` has no bfloat16 ("unknown type bfloat16").
Cost: one type test and one comparison per operator call that is given a dtype.  Patch name
``bfloat16_name`` (MXNet 1.7+).
"""

import wrapt

from .._core import facts
from .._core.registry import Patch, Target, record, register

PATCH = "bfloat16_name"
NAME = "bfloat16"


class _Bfloat16Name:
    """What the generated operator code reads of ``numpy.dtype("bfloat16")`` where ml_dtypes
    registered the name (``.names``: None, no fields; ``.name``), and nothing else: that code
    reads these two attributes only."""

    __slots__ = ()
    names = None
    name = NAME

    def __repr__(self):
        return "dtype(%r)" % NAME


_BFLOAT16 = _Bfloat16Name()


class _OperatorNumpy(wrapt.ObjectProxy):
    """The ``numpy`` module as the generated operator functions see it: NumPy itself, but for
    ``dtype("bfloat16")``."""

    def dtype(self, obj, *args, **kwargs):
        if isinstance(obj, str) and obj == NAME and not args and not kwargs:
            record(PATCH)
            return _BFLOAT16
        return self.__wrapped__.dtype(obj, *args, **kwargs)


# The modules whose generated operator functions read `_np.dtype(dtype)`.
_MODULES = ("mxnet.ndarray.register", "mxnet.symbol.register")

register(
    Patch(
        PATCH,
        'dtype="bfloat16" works in every operator (amp_cast, Cast, zeros...), with or without '
        "ml_dtypes loaded.",
        targets=[Target(module, "_np", proxy=_OperatorNumpy) for module in _MODULES],
        since=facts.NDARRAY_BFLOAT16,
    )
)
