"""``ndarray.tostring`` (removed in NumPy 2.3) in ``recordio`` (part of patch ``numpy2``).

``recordio.pack``/``pack_img`` run, for that call only, over a copy of their module's
namespace whose ``np.asarray``/``cv2.imencode`` return views that still have it; the module
itself is never changed, so threads are safe.
"""

import types

from ..._core.registry import record
from . import _state
from ._state import PATCH


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
    return array.view(_state.tostring)


def _wrap_pack(wrapped, instance, args, kwargs):
    # pack calls label.tostring() on np.asarray(header.label): its np.asarray returns a view
    # that still has tostring (a number label never reaches np.asarray).
    if not _state.on or _state.tostring is None:
        return wrapped(*args, **kwargs)
    np = _state.np
    overlay = _Overlay(np, asarray=lambda *a, **k: _with_tostring(np.asarray(*a, **k)))
    record(PATCH)
    return _call_with(wrapped, args, kwargs, np=overlay)


def _wrap_pack_img(wrapped, instance, args, kwargs):
    # pack_img calls buf.tostring() on what cv2.imencode returned (without OpenCV MXNet
    # stops at its own `assert cv2 is not None`).
    cv2 = getattr(wrapped, "__globals__", {}).get("cv2")
    if not _state.on or _state.tostring is None or cv2 is None:
        return wrapped(*args, **kwargs)

    def imencode(*a, **k):
        ok, buf = cv2.imencode(*a, **k)
        return ok, _with_tostring(buf)

    record(PATCH)
    return _call_with(wrapped, args, kwargs, cv2=_Overlay(cv2, imencode=imencode))
