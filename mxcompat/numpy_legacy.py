"""Opt-in: the NumPy names legacy *user* code reads, back on today's NumPy, each with a warning.

Legacy MXNet codebases are legacy NumPy codebases too: ``np.asscalar``, ``np.float``,
``np.object``, ``np.product``, ``np.alltrue``… fail on today's NumPy in the users' own code.
Opted in (``mxcompat.numpy_legacy()``, ``MXCOMPAT_NUMPY_LEGACY=1`` or
``mxcompat run --numpy-legacy``), a name the installed NumPy no longer has is served by
NumPy's module ``__getattr__`` with the replacement NumPy documents, and one
``MXCompatWarning`` per name at its first use, pointing at the user's line.  A name NumPy
still has (or still serves itself, with its own deprecation warning) is never touched, and
without the opt-in nothing changes.  The names MXNet's own code reads are restored for MXNet
by the ``numpy_names`` patch as plain attributes, without a warning.
"""

from __future__ import annotations

import sys
import threading
import warnings

from ._core import hooks, settings
from ._core.log import warn_once
from .patches import numpy_names

ENV = settings.NUMPY_LEGACY


def _asscalar(np):
    def asscalar(a):
        return a.item()

    asscalar.__module__ = "numpy"
    return asscalar


def _asfarray(np):
    def asfarray(a, dtype=np.float64):
        # NumPy's own rule: a non-inexact dtype means float64.
        if not np.issubdtype(dtype, np.inexact):
            dtype = np.float64
        return np.asarray(a, dtype=dtype)

    asfarray.__module__ = "numpy"
    return asfarray


_SHARED = dict(numpy_names.NAMES)

# name -> (factory(numpy) of the value, how the warning names the replacement)
REPLACEMENTS = {
    "asscalar": (_asscalar, "a.item()"),
    "bool": (_SHARED["bool"], "the builtin bool"),
    "int": (_SHARED["int"], "the builtin int"),
    "float": (_SHARED["float"], "the builtin float"),
    "complex": (lambda np: complex, "the builtin complex"),
    "object": (lambda np: object, "the builtin object"),
    "str": (lambda np: str, "the builtin str"),
    "long": (lambda np: int, "the builtin int"),
    "unicode": (lambda np: str, "the builtin str"),
    "float_": (lambda np: np.float64, "numpy.float64"),
    "complex_": (lambda np: np.complex128, "numpy.complex128"),
    "cfloat": (lambda np: np.complex128, "numpy.complex128"),
    "singlecomplex": (lambda np: np.complex64, "numpy.complex64"),
    "longfloat": (lambda np: np.longdouble, "numpy.longdouble"),
    "longcomplex": (lambda np: np.clongdouble, "numpy.clongdouble"),
    "clongfloat": (lambda np: np.clongdouble, "numpy.clongdouble"),
    "string_": (lambda np: np.bytes_, "numpy.bytes_"),
    "unicode_": (lambda np: np.str_, "numpy.str_"),
    "Inf": (_SHARED["Inf"], "numpy.inf"),
    "Infinity": (_SHARED["Inf"], "numpy.inf"),
    "infty": (_SHARED["Inf"], "numpy.inf"),
    "PINF": (_SHARED["PINF"], "numpy.inf"),
    "NINF": (_SHARED["NINF"], "-numpy.inf"),
    "NaN": (_SHARED["NaN"], "numpy.nan"),
    "NAN": (_SHARED["NAN"], "numpy.nan"),
    "PZERO": (_SHARED["PZERO"], "0.0"),
    "NZERO": (_SHARED["NZERO"], "-0.0"),
    "alltrue": (_SHARED["alltrue"], "numpy.all"),
    "sometrue": (_SHARED["sometrue"], "numpy.any"),
    "product": (_SHARED["product"], "numpy.prod"),
    "cumproduct": (lambda np: np.cumprod, "numpy.cumprod"),
    "round_": (_SHARED["round_"], "numpy.round"),
    "msort": (_SHARED["msort"], "numpy.sort(a, axis=0)"),
    "in1d": (_SHARED["in1d"], "numpy.isin(a, b).ravel()"),
    "trapz": (_SHARED["trapz"], "numpy.trapezoid"),
    "row_stack": (lambda np: np.vstack, "numpy.vstack"),
    "asfarray": (_asfarray, "numpy.asarray(a, dtype=float)"),
}

_lock = threading.Lock()
_enabled = False  # the opt-in is on
_hooked = False  # a post-import hook waits for numpy
_original = None  # numpy's module class before ours
_values = {}  # name -> the value served (built at its first use)


def enabled() -> bool:
    """Whether the opt-in is on in this process."""
    return _enabled


def numpy_legacy(enable: bool = True) -> None:
    """Serve the NumPy names legacy code reads where today's NumPy removed them (opt-in).

    Each name gets one ``MXCompatWarning`` at its first use; ``numpy_legacy(False)`` takes
    them away again.  Names NumPy still has are never touched."""
    global _enabled, _hooked
    with _lock:
        _enabled = bool(enable)
        np = sys.modules.get("numpy")
        if enable and np is None and not _hooked:
            _hooked = True
            hooks.when_imported("numpy", _on_numpy_import)
        elif np is not None:
            (_install if enable else _remove)(np)


def _on_numpy_import(np):
    with _lock:
        if _enabled:
            _install(np)


def _install(np):
    # A module subclass's __getattr__ runs only after NumPy's own module __getattr__ raised:
    # every name NumPy has or still serves (with its own deprecation warning, attributed to
    # the user's line) is NumPy's as before, and only what it refuses reaches us.
    if getattr(type(np), "_mxcompat_numpy_legacy", False):
        return
    global _original
    _original = type(np)
    np.__class__ = type(
        "NumPyWithLegacyNames",
        (type(np),),
        {"_mxcompat_numpy_legacy": True, "__getattr__": _legacy_getattr},
    )


def _legacy_getattr(module, name):
    if name not in REPLACEMENTS:
        numpy_getattr = vars(module).get("__getattr__")
        if numpy_getattr is not None:
            # NumPy's own error message (e.g. what replaces a removed name), said again.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                numpy_getattr(name)
        raise AttributeError("module 'numpy' has no attribute %r" % name)
    value = _value(module, name)
    warn_once(
        ("numpy-legacy", name),
        "numpy.%s is gone from NumPy %s; legacy code gets %s from mxcompat "
        "(numpy_legacy): use that instead" % (name, module.__version__, REPLACEMENTS[name][1]),
    )
    return value


def _value(np, name):
    if name not in _values:
        _values[name] = REPLACEMENTS[name][0](np)
    return _values[name]


def _remove(np):
    if getattr(type(np), "_mxcompat_numpy_legacy", False):
        np.__class__ = _original


def _from_env():
    if settings.flag(ENV):
        numpy_legacy(True)


_from_env()
