"""``int()`` of a 1-element array (refused from NumPy 2.4) in ``while_loop`` (part of patch
``numpy2``).

``while_loop``'s ``max_iterations`` (documented as "a numpy ndarray") is passed as the 0-d
array of its element.

Where MXNet's own code makes Python scalars (``tests/support/mxnet_scalar_conversions.py``, an
``ast`` scan of 1.3.1 … 1.9.1; every candidate run on 1.9.1 and 1.5.1 with NumPy 2.5.5 and
compared with NumPy 1.23.5; ``tests/patches/test_numpy2.py`` holds the verdict of each of the
82 and fails on a new one):

===================================================  ===================================
where (releases: file:line)                          on NumPy >= 2.4
===================================================  ===================================
``nd.contrib.while_loop`` ``int(max_iterations)``    **broken**: "Cannot convert
via ``_to_python_scalar`` (1.3.1 ndarray/contrib     max_iteration to python int";
:325, 1.5.1 :327, 1.9.1 :330; symbol/contrib :456,   fixed here
1.5.1/1.9.1 :453)
``cond``'s ``bool(pred)``, ``loss_scaler``'s         fine: ``bool()`` of a 1-element
``bool(gpu_output.asnumpy())``                       array is still allowed
``asscalar`` (``asnumpy()[0]``), metrics, monitor,   fine: NumPy scalars or Python
initializer stats, ``clip_global_norm``,             numbers, never 1-element arrays
quantization ranges and histograms, detection
crops, lr schedulers
``float(value)`` in NDArray ``__setitem__``,         fine: reached only for scalars
``__iadd__`` …, ``_ufunc_helper``
``int(np.prod(shape))``, ``range(np.prod(...))``     fine: 0-d results
``%``-formatted messages (``test_utils``,            fine; they print NumPy 2 reprs
quantization logs)                                   (``(np.int64(1),)``), cosmetic
``Xavier(magnitude)``, ``mx.random.seed``,           the caller's value, documented as
``sym.full(val)``, profiler counters                 a Python number
===================================================  ===================================
"""

from ..._core.registry import record
from ..._core.util import bind_arguments
from . import _state
from ._state import PATCH


def _wrap_while_loop(wrapped, instance, args, kwargs):
    # while_loop(cond, func, loop_vars, max_iterations=None[, name]) runs int(max_iterations),
    # documented to take a NumPy array: a 1-element one goes in as the 0-d array of its
    # element, which int() converts as NumPy 1 converted the 1-element array.
    if _state.on and _state.one_element:
        bound = bind_arguments(wrapped, args, kwargs)
        value = bound.arguments.get("max_iterations")
        if isinstance(value, _state.np.ndarray) and value.ndim > 0 and value.size == 1:
            bound.arguments["max_iterations"] = value.reshape(())
            record(PATCH)
            return wrapped(*bound.args, **bound.kwargs)
    return wrapped(*args, **kwargs)
