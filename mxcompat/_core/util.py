"""Small helpers shared by the patch modules."""

import functools
import inspect


def bind_arguments(wrapped, args, kwargs):
    """``inspect.BoundArguments`` of a call to ``wrapped``, so wrappers can edit arguments
    by name whether they came positionally or by keyword."""
    func = getattr(wrapped, "__func__", wrapped)
    return _signature(func, func is not wrapped).bind(*args, **kwargs)


@functools.lru_cache(maxsize=None)
def _signature(func, bound_method):
    # Cached: inspect.signature costs more than the call it describes.
    sig = inspect.signature(func)
    if bound_method:  # wrapt hands us the bound method: no ``self`` in the call
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    return sig


def symbol_arguments(symbol):
    """``symbol.list_arguments()``, or ``None`` if ``symbol`` is not a Symbol (MXNet then
    fails in its own words)."""
    try:
        return list(symbol.list_arguments())
    except Exception:
        return None


def unpack_sym_gen(result):
    """``(symbol, data_names, label_names)`` from what a BucketingModule's ``sym_gen``
    returned, or ``None`` if it is not such a triple (MXNet then fails in its own words)."""
    try:
        symbol, data_names, label_names = result
    except (TypeError, ValueError):
        return None
    return symbol, data_names, label_names
