"""NEP 51 scalar reprs: operator parameters as NumPy 1 wrote them (part of patch ``numpy2``).

MXNet hands operator parameters to its C++ core as ``str(value)``, so a list or tuple holding
NumPy scalars (``(np.int64(3), np.int64(2))``, which NumPy 2 prints with the type) is written
as NumPy 1 wrote it at every place MXNet stringifies parameters: ``_imperative_invoke`` (every
``mx.nd``/``mx.np`` operator), ``_symbol_creator`` (every ``mx.sym`` operator), ``CachedOp``
flags, ``mx.sym.var`` and the ``mx.io`` iterator constructors.  On the operator path it costs
~0.15 µs per call (a function with MXNet's signature and one type test per parameter; see
``_invoke_proxy``).
"""

import functools
import sys

from ..._core.registry import record
from ..._core.util import bind_arguments
from . import _state
from ._state import PATCH


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
    np = _state.np
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
    if _state.on and kwargs:
        fixed = _legacy_values(list(kwargs.values()))
        kwargs = dict(zip(kwargs.keys(), fixed))
    return wrapped(*args, **kwargs)


def _wrap_cached_op_init(wrapped, instance, args, kwargs):
    # CachedOp(sym, flags=()) with flags a sequence of (key, value).
    if _state.on:
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
    if _state.on:
        bound = bind_arguments(wrapped, args, kwargs)
        changed = False
        for name, value in list(bound.arguments.items()):
            if name == "kwargs":
                extra = dict(value)
                for key, v in value.items():
                    if _needs_legacy(v, _state.np.generic):
                        extra[key] = _legacy_repr(v, _state.np)
                        changed = True
                bound.arguments[name] = extra
            elif name == "shape" and _needs_legacy(value, _state.np.generic):
                # The shape must stay a tuple (var also uses it); plain ints print as NumPy 1.
                bound.arguments[name] = type(value)(
                    int(d) if isinstance(d, _state.np.integer) else d for d in value
                )
                changed = True
        if changed:
            record(PATCH)
            return wrapped(*bound.args, **bound.kwargs)
    return wrapped(*args, **kwargs)
