"""NEP 50 promotion: metric sums accumulate as under NumPy 1 (part of patch ``numpy2``).

Metrics seed ``sum_metric``/``global_sum_metric`` at reset with a ``float`` subclass that adds
NumPy scalars through ``float64`` (it pickles, copies and deepcopies as a plain ``float``);
1.3.1's ``clip_global_norm`` gets its scale through ``float64``.
"""

from ..._core import facts
from ..._core.registry import record
from ..._core.util import bind_arguments
from . import _state
from ._state import PATCH


class _Sum(float):
    """A metric's running sum at reset: adds like a Python ``float`` under NumPy 1.

    NumPy 1 promoted ``0.0 + np.float32(x)`` to ``float64``; NEP 50 keeps ``float32``.  This
    float sends NumPy scalars (and 0-d arrays) through ``float64``, so the first update turns
    the sum into what NumPy 1 produced, and plain numbers give a plain ``float``.
    """

    __slots__ = ()

    def _numpy_operand(self, other):
        np = _state.np
        return isinstance(other, np.generic) or (isinstance(other, np.ndarray) and other.ndim == 0)

    def __add__(self, other):
        if self._numpy_operand(other):
            record(PATCH)
            return _state.np.float64(float(self)) + other
        return float.__add__(self, other)

    def __radd__(self, other):
        if self._numpy_operand(other):
            record(PATCH)
            return other + _state.np.float64(float(self))
        return float.__radd__(self, other)

    def __reduce__(self):
        return (float, (float(self),))  # pickles as the float it is

    # ...but a copy stays a _Sum: MXNet's own tests (test_metric's _check_global_metric) and
    # users deepcopy a fresh metric, whose copy must sum as the original does.  Immutable, so
    # the copy is the object itself.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


_SUM_ATTRS = ("sum_metric", "global_sum_metric")


def _wrap_metric_reset(wrapped, instance, args, kwargs):
    result = wrapped(*args, **kwargs)
    if _state.on and instance is not None:
        for attr in _SUM_ATTRS:
            value = instance.__dict__.get(attr)
            if type(value) is float:
                instance.__dict__[attr] = _Sum(value)
    return result


def _wrap_clip_global_norm(wrapped, instance, args, kwargs):
    if not _state.on or facts.since(facts.CLIP_GLOBAL_NORM_NDARRAY):
        return wrapped(*args, **kwargs)
    bound = bind_arguments(wrapped, args, kwargs)
    arrays, max_norm = bound.arguments["arrays"], bound.arguments["max_norm"]
    # MXNet's own function computes the norm (and warns on nan/inf).  Given a NaN max_norm,
    # its scale `max_norm / (total_norm + 1e-8)` is NaN, never < 1, so it scales nothing;
    # the arrays are scaled here instead, by that quotient taken through float64 as NumPy 1
    # took it (NEP 50 keeps `np.float32 + 1e-8` in float32).
    total_norm = wrapped(arrays, float("nan"))
    scale = max_norm / (_state.np.float64(total_norm) + 1e-8)
    if scale < 1.0:
        record(PATCH)
        for arr in arrays:
            arr *= scale
    return total_norm
