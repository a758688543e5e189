"""MXNet's Python layer on NumPy 2's new behaviour (user manual: docs/guide/numpy2.md);
applied only on NumPy 2.  Where each fix sits, and why:

* NEP 51 scalar reprs: MXNet hands operator parameters to its C++ core as ``str(value)``, so
  a list or tuple holding NumPy scalars is written as NumPy 1 wrote it at every place MXNet
  stringifies parameters: ``_imperative_invoke`` (every ``mx.nd``/``mx.np`` operator),
  ``_symbol_creator`` (every ``mx.sym`` operator), ``CachedOp`` flags, ``mx.sym.var`` and the
  ``mx.io`` iterator constructors.
* NEP 50 promotion: metrics seed ``sum_metric``/``global_sum_metric`` at reset with a
  ``float`` subclass that adds NumPy scalars through ``float64`` (it pickles, copies and
  deepcopies as a plain ``float``); 1.3.1's ``clip_global_norm`` gets its scale through
  ``float64``.
* ``ndarray.tostring`` (gone in 2.3): ``recordio.pack``/``pack_img`` run, for that call only,
  over a copy of their module's namespace whose ``np.asarray``/``cv2.imencode`` return views
  that still have it; the module itself is never changed, so threads are safe.
* ``int()`` of a 1-element array (refused from 2.4): ``while_loop``'s ``max_iterations``
  (documented as "a numpy ndarray") is passed as the 0-d array of its element.

  Where MXNet's own code makes Python scalars (``tests/support/mxnet_scalar_conversions.py``, an
  ``ast`` scan of 1.3.1 … 1.9.1; every candidate run on 1.9.1 and 1.5.1 with NumPy 2.5.5 and
  compared with NumPy 1.23.5; ``tests/patches/test_numpy.py`` holds the verdict of each of the
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

  The other removals of NumPy 2.3-2.5 reach no MXNet code (an ``ast`` scan of 1.3.1 … 1.9.1
  for each):
  ``np.reshape(newshape=)`` (only ``mx.np``'s own operator has that keyword),
  ``np.sum(generator)`` (none), ``np.nonzero`` of a 0-d array (``broadcast_to``: 1-d only),
  ``np.array(copy=False)`` (none; ``astype(copy=False)`` is MXNet's own or allowed),
  ``np.fromstring`` (none), setting ``ndarray.shape``/``strides`` (only MXNet and ctypes
  objects), ``np.core`` (``moveaxis``: still works, with NumPy's ``DeprecationWarning``).

NumPy's own settings (print options, promotion state) are never touched.  The patch applies
only on NumPy 2 (on NumPy 1 nothing is wrapped).  On the operator path it costs ~0.15 µs per
call (a function with MXNet's signature and one type test per parameter; see
``_invoke_proxy``).  Patch name ``numpy2``.
"""

import functools
import sys
import types

from .._core import facts as _compat
from .._core.registry import Patch, Target, record, register
from .._core.util import bind_arguments

PATCH = "numpy2"

# Set when the patch is applied (read on every operator call: plain globals are the cheapest).
_on = False  # NumPy 2 is imported: the fixes are needed
_np = None  # the numpy module
_tostring = None  # the ndarray view class that serves tostring (NumPy >= 2.3), or None
_one_element = False  # NumPy refuses a scalar of a 1-element array


def _numpy2():
    """Whether the installed NumPy is 2.0 or newer."""
    return _compat.numpy_since(_compat.NUMPY_2)


# --- NEP 51: parameters as NumPy 1 wrote them ----------------------------------------------


def _needs_legacy(value, generic):
    # Only a plain list/tuple holding a NumPy scalar (at any depth) prints differently.
    if type(value) not in (list, tuple):
        return False
    for item in value:
        if isinstance(item, generic) or _needs_legacy(item, generic):
            return True
    return False


def _legacy_repr(value, np):
    if isinstance(value, np.generic):
        if isinstance(value, (np.str_, np.bytes_)):
            return repr(value.item())
        return str(value)  # NumPy 1's repr of a numeric scalar was its str
    if type(value) is tuple:
        inner = ", ".join(_legacy_repr(v, np) for v in value)
        return "(%s,)" % inner if len(value) == 1 else "(%s)" % inner
    if type(value) is list:
        return "[%s]" % ", ".join(_legacy_repr(v, np) for v in value)
    return repr(value)


def legacy_str(value):
    """``str(value)`` as NumPy 1 printed it (differs only for lists/tuples of NumPy scalars)."""
    np = sys.modules.get("numpy")
    if np is not None and _needs_legacy(value, np.generic):
        return _legacy_repr(value, np)
    return str(value)


_SEQUENCES = (list, tuple)


def _legacy_values(values):
    """``values`` with each list/tuple holding NumPy scalars pre-stringified; the same object
    when nothing needs it (the common case: one type check per value)."""
    np = _np
    generic = np.generic
    fixed = None
    for i, value in enumerate(values):
        if type(value) in (list, tuple) and _needs_legacy(value, generic):
            if fixed is None:
                fixed = list(values)
            fixed[i] = _legacy_repr(value, np)
    if fixed is None:
        return values
    record(PATCH)
    return fixed


# Types whose str() NumPy 2 does not change: a list/tuple of only these is sent as it is.
_PLAIN = frozenset((int, float, str, bool, type(None)))


def _plain(vals):
    """No list/tuple among ``vals`` holds anything but plain Python values (the common case:
    one type test per value and per item of a tuple such as ``kernel=(2, 2)``)."""
    for value in vals:
        if type(value) in _SEQUENCES:
            for item in value:
                if type(item) not in _PLAIN:
                    return False
    return True


def _signature(func):
    code = getattr(func, "__code__", None)
    if code is None or func.__defaults__ or func.__kwdefaults__:
        return None
    return code.co_varnames[: code.co_argcount]


def _invoke_proxy(original):
    """``_imperative_invoke(handle, ndargs, keys, vals, out[, is_np_op[, output_is_list]])``
    (1.3-1.5, 1.6, 1.7+), which every ``mx.nd`` / ``mx.np`` operator call goes through.

    A plain function with MXNet's exact signature (``__wrapped__`` names the original, so
    ``unpatch`` and wrappers stacked over it find it), with the check inlined: measured on
    Python 3.13 with MXNet 1.9.1's small operators, this costs half the ``wrapt.ObjectProxy``
    it replaces (~0.15 vs ~0.3 us per operator call; a ``FunctionWrapper`` ~2 us, against
    ~13 us for the operator itself)."""
    signature = _signature(original)
    seq, plain, legacy = _SEQUENCES, _PLAIN, _legacy_values
    # One function per arity, spelled out: star arguments or a shared helper call would each
    # add about a third to the cost.
    if signature == _INVOKE_ARGS:

        def invoke(handle, ndargs, keys, vals, out, is_np_op, output_is_list):
            for value in vals:
                if type(value) in seq:
                    for item in value:
                        if type(item) not in plain:
                            break
                    else:
                        continue
                    vals = legacy(vals)  # fixes every value at once
                    break
            return original(handle, ndargs, keys, vals, out, is_np_op, output_is_list)
    elif signature == _INVOKE_ARGS[:6]:

        def invoke(handle, ndargs, keys, vals, out, is_np_op):
            for value in vals:
                if type(value) in seq:
                    for item in value:
                        if type(item) not in plain:
                            break
                    else:
                        continue
                    vals = legacy(vals)  # fixes every value at once
                    break
            return original(handle, ndargs, keys, vals, out, is_np_op)
    elif signature == _INVOKE_ARGS[:5]:

        def invoke(handle, ndargs, keys, vals, out):
            for value in vals:
                if type(value) in seq:
                    for item in value:
                        if type(item) not in plain:
                            break
                    else:
                        continue
                    vals = legacy(vals)  # fixes every value at once
                    break
            return original(handle, ndargs, keys, vals, out)
    else:
        return _generic_proxy(original, 3)
    return functools.wraps(original)(invoke)


_INVOKE_ARGS = ("handle", "ndargs", "keys", "vals", "out", "is_np_op", "output_is_list")


def _generic_proxy(original, position):
    """Any signature with the values at ``position`` (``vals`` by keyword):
    ``_symbol_creator(handle, args, kwargs, keys, vals, name, ...)`` (one call per symbol
    made, not per operator run) and an unknown ``_imperative_invoke``."""
    import wrapt

    class _Parameters(wrapt.ObjectProxy):
        def __call__(self, *args, **kwargs):
            if len(args) > position:
                if not _plain(args[position]):
                    args = (
                        args[:position] + (_legacy_values(args[position]),) + args[position + 1 :]
                    )
            elif "vals" in kwargs and not _plain(kwargs["vals"]):
                kwargs["vals"] = _legacy_values(kwargs["vals"])
            return original(*args, **kwargs)

    return _Parameters(original)


def _creator_proxy(original):
    return _generic_proxy(original, 4)


def _wrap_kwargs_values(wrapped, instance, args, kwargs):
    # The mx.io iterator constructors (**kwargs), which send str(value) for each.
    if _on and kwargs:
        fixed = _legacy_values(list(kwargs.values()))
        kwargs = dict(zip(kwargs.keys(), fixed))
    return wrapped(*args, **kwargs)


def _wrap_cached_op_init(wrapped, instance, args, kwargs):
    # CachedOp(sym, flags=()) with flags a sequence of (key, value).
    if _on:
        bound = bind_arguments(wrapped, args, kwargs)
        flags = list(bound.arguments.get("flags", ()))
        if flags:
            values = _legacy_values([v for _, v in flags])
            bound.arguments["flags"] = [(k, v) for (k, _), v in zip(flags, values)]
            return wrapped(*bound.args, **bound.kwargs)
    return wrapped(*args, **kwargs)


def _wrap_var(wrapped, instance, args, kwargs):
    # var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, ..., **kwargs) writes
    # attr['__shape__'] = str(shape) and attr['__k__'] = str(v) itself.
    if _on:
        bound = bind_arguments(wrapped, args, kwargs)
        changed = False
        for name, value in list(bound.arguments.items()):
            if name == "kwargs":
                extra = dict(value)
                for key, v in value.items():
                    if _needs_legacy(v, _np.generic):
                        extra[key] = _legacy_repr(v, _np)
                        changed = True
                bound.arguments[name] = extra
            elif name == "shape" and _needs_legacy(value, _np.generic):
                # The shape must stay a tuple (var also uses it); plain ints print as NumPy 1.
                bound.arguments[name] = type(value)(
                    int(d) if isinstance(d, _np.integer) else d for d in value
                )
                changed = True
        if changed:
            record(PATCH)
            return wrapped(*bound.args, **bound.kwargs)
    return wrapped(*args, **kwargs)


# --- NEP 50: metric sums accumulate as under NumPy 1 ---------------------------------------


class _Sum(float):
    """A metric's running sum at reset: adds like a Python ``float`` under NumPy 1.

    NumPy 1 promoted ``0.0 + np.float32(x)`` to ``float64``; NEP 50 keeps ``float32``.  This
    float sends NumPy scalars (and 0-d arrays) through ``float64``, so the first update turns
    the sum into what NumPy 1 produced, and plain numbers give a plain ``float``.
    """

    __slots__ = ()

    def _numpy_operand(self, other):
        np = _np
        return isinstance(other, np.generic) or (isinstance(other, np.ndarray) and other.ndim == 0)

    def __add__(self, other):
        if self._numpy_operand(other):
            record(PATCH)
            return _np.float64(float(self)) + other
        return float.__add__(self, other)

    def __radd__(self, other):
        if self._numpy_operand(other):
            record(PATCH)
            return other + _np.float64(float(self))
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
    if _on and instance is not None:
        for attr in _SUM_ATTRS:
            value = instance.__dict__.get(attr)
            if type(value) is float:
                instance.__dict__[attr] = _Sum(value)
    return result


def _wrap_clip_global_norm(wrapped, instance, args, kwargs):
    if not _on or _compat.since(_compat.CLIP_GLOBAL_NORM_NDARRAY):
        return wrapped(*args, **kwargs)
    bound = bind_arguments(wrapped, args, kwargs)
    arrays, max_norm = bound.arguments["arrays"], bound.arguments["max_norm"]
    # MXNet's own function computes the norm (and warns on nan/inf).  Given a NaN max_norm,
    # its scale `max_norm / (total_norm + 1e-8)` is NaN, never < 1, so it scales nothing;
    # the arrays are scaled here instead, by that quotient taken through float64 as NumPy 1
    # took it (NEP 50 keeps `np.float32 + 1e-8` in float32).
    total_norm = wrapped(arrays, float("nan"))
    scale = max_norm / (_np.float64(total_norm) + 1e-8)
    if scale < 1.0:
        record(PATCH)
        for arr in arrays:
            arr *= scale
    return total_norm


# --- ndarray.tostring (removed in NumPy 2.3) in recordio -----------------------------------


class _Overlay:
    """A module as the code run by ``_call_with`` sees it: ``attrs`` first, then the module."""

    def __init__(self, module, **attrs):
        self.__dict__.update(attrs)
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)


def _call_with(func, args, kwargs, **names):
    """Call ``func`` (MXNet's own code, unchanged) with ``names`` in place of its module's
    globals of those names, for this call only: the code runs over a copy of the module's
    namespace, so the module, other threads and other calls still see the originals."""
    if type(func) is not types.FunctionType:
        return func(*args, **kwargs)  # someone else's wrapper beneath ours: left as it is
    namespace = dict(func.__globals__, **names)
    twin = types.FunctionType(
        func.__code__, namespace, func.__name__, func.__defaults__, func.__closure__
    )
    twin.__kwdefaults__ = func.__kwdefaults__
    return twin(*args, **kwargs)


def _tostring_class(np):
    """An ndarray subclass with the ``tostring`` NumPy 2.3 removed (its ``tobytes``), or
    ``None`` while NumPy still has it."""
    if np is None or hasattr(np.ndarray, "tostring"):
        return None

    class _ArrayWithTostring(np.ndarray):
        def tostring(self, order="C"):
            return self.tobytes(order)

    return _ArrayWithTostring


def _with_tostring(array):
    return array.view(_tostring)


def _wrap_pack(wrapped, instance, args, kwargs):
    # pack calls label.tostring() on np.asarray(header.label): its np.asarray returns a view
    # that still has tostring (a number label never reaches np.asarray).
    if not _on or _tostring is None:
        return wrapped(*args, **kwargs)
    np = _np
    overlay = _Overlay(np, asarray=lambda *a, **k: _with_tostring(np.asarray(*a, **k)))
    record(PATCH)
    return _call_with(wrapped, args, kwargs, np=overlay)


def _wrap_pack_img(wrapped, instance, args, kwargs):
    # pack_img calls buf.tostring() on what cv2.imencode returned (without OpenCV MXNet
    # stops at its own `assert cv2 is not None`).
    cv2 = getattr(wrapped, "__globals__", {}).get("cv2")
    if not _on or _tostring is None or cv2 is None:
        return wrapped(*args, **kwargs)

    def imencode(*a, **k):
        ok, buf = cv2.imencode(*a, **k)
        return ok, _with_tostring(buf)

    record(PATCH)
    return _call_with(wrapped, args, kwargs, cv2=_Overlay(cv2, imencode=imencode))


# --- int() of a 1-element array (refused from NumPy 2.4) in while_loop ---------------------


def _wrap_while_loop(wrapped, instance, args, kwargs):
    # while_loop(cond, func, loop_vars, max_iterations=None[, name]) runs int(max_iterations),
    # documented to take a NumPy array: a 1-element one goes in as the 0-d array of its
    # element, which int() converts as NumPy 1 converted the 1-element array.
    if _on and _one_element:
        bound = bind_arguments(wrapped, args, kwargs)
        value = bound.arguments.get("max_iterations")
        if isinstance(value, _np.ndarray) and value.ndim > 0 and value.size == 1:
            bound.arguments["max_iterations"] = value.reshape(())
            record(PATCH)
            return wrapped(*bound.args, **bound.kwargs)
    return wrapped(*args, **kwargs)


# --- targets --------------------------------------------------------------------------------


def _on_apply():
    global _np, _on, _tostring, _one_element
    _np = sys.modules.get("numpy")
    _on = _numpy2()
    _tostring = _tostring_class(_np)
    _one_element = _compat.numpy_since(_compat.NUMPY_REFUSES_SCALAR_OF_1_ELEMENT_ARRAY)


def _on_remove():
    global _on
    _on = False


_IO_ITERATORS = (
    "CSVIter",
    "ImageDetRecordIter",
    "ImageRecordInt8Iter",
    "ImageRecordIter",
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter",
    "ImageRecordUInt8Iter_v1",
    "LibSVMIter",
    "MNISTIter",
)

# Metric classes (present in 1.3.1 … 1.9.1) whose own reset / reset_local set the sums:
# reset_local appears in 1.4, PearsonCorrelation.reset in 1.6 (before, the inherited one is
# wrapped on the subclass, harmlessly).  PCC (1.5+) computes its sums as properties.
_METRIC_RESETS = [
    ("EvalMetric", "reset"),
    ("EvalMetric", "reset_local"),
    ("F1", "reset"),
    ("F1", "reset_local"),
    ("MCC", "reset"),
    ("MCC", "reset_local"),
    ("PearsonCorrelation", "reset"),
]


def _targets():
    invoke, create = _invoke_proxy, _creator_proxy
    targets = [
        # Every namespace that holds the function the generated operators call.
        Target("mxnet._ctypes.ndarray", "_imperative_invoke", proxy=invoke),
        Target("mxnet.ndarray._internal", "_imperative_invoke", proxy=invoke),
        Target("mxnet.ndarray.register", "_imperative_invoke", proxy=invoke),
        Target("mxnet._ctypes.symbol", "_symbol_creator", proxy=create),
        Target("mxnet.symbol._internal", "_symbol_creator", proxy=create),
        Target("mxnet.symbol.register", "_symbol_creator", proxy=create),
        Target("mxnet._ctypes.ndarray", "CachedOp.__init__", _wrap_cached_op_init),
        Target("mxnet.symbol.symbol", "var", _wrap_var),
        Target("mxnet.symbol.symbol", "Variable", _wrap_var),
        Target("mxnet.symbol", "var", _wrap_var),
        Target("mxnet.symbol", "Variable", _wrap_var),
        Target("mxnet.gluon.utils", "clip_global_norm", _wrap_clip_global_norm),
        Target("mxnet.recordio", "pack", _wrap_pack),
        Target("mxnet.recordio", "pack_img", _wrap_pack_img),
        Target("mxnet.ndarray.contrib", "while_loop", _wrap_while_loop),
        Target("mxnet.symbol.contrib", "while_loop", _wrap_while_loop),
    ]
    # io.py up to 1.3, the io package (io/io.py, re-exported by io/__init__) from 1.4.
    for module in ("mxnet.io", "mxnet.io.io"):
        for name in _IO_ITERATORS:
            targets.append(Target(module, name, _wrap_kwargs_values, optional=True))
    for cls, method in _METRIC_RESETS:
        targets.append(
            Target("mxnet.metric", "%s.%s" % (cls, method), _wrap_metric_reset, optional=True)
        )
    return targets


# On NumPy 2 only (when=_numpy2): on NumPy 1 nothing is wrapped.
register(
    Patch(
        PATCH,
        "MXNet's Python layer on NumPy 2: NumPy 1 scalar reprs in operator "
        "parameters (NEP 51), NumPy 1 promotion in metric sums (NEP 50), "
        "tobytes for the removed ndarray.tostring, while_loop's "
        "max_iterations as a 1-element array (NumPy >= 2.4).",
        targets=_targets(),
        on_apply=_on_apply,
        on_remove=_on_remove,
        when=_numpy2,
    )
)
