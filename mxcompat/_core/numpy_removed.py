"""The NumPy names MXNet's Python code reads that NumPy 1.24 … 2.x removed, each with the
replacement NumPy documents, and the functions that add them back and take them away: the
patch ``numpy_names`` (its docstring has the table) and the ``.pth`` of ``mxcompat install``,
which needs them without the patch registry.  Imports nothing of mxcompat."""

import functools
import sys
import threading
import types
import warnings

_FINANCIAL = ("mirr", "npv", "pmt", "ppmt", "pv", "rate")

_FINANCIAL_MESSAGE = (
    "numpy.{0} was taken out of NumPy in 1.20 (NEP 32): the financial functions live in the "
    "numpy-financial package now.  Install it (pip install numpy-financial) and call "
    "numpy_financial.{0}.  mxcompat put this numpy.{0} back as a placeholder only so that "
    "MXNet, which re-exports the name, can be imported."
)


def _financial(name):
    def removed(*args, **kwargs):
        raise RuntimeError(_FINANCIAL_MESSAGE.format(name))

    removed.__name__ = removed.__qualname__ = name
    removed.__module__ = "numpy"
    removed.__doc__ = (
        "Removed from NumPy (NEP 32): use numpy_financial.%s from the "
        "numpy-financial package.  Calling this stub raises RuntimeError." % name
    )
    return removed


def _financial_maker(name, np):
    return _financial(name)


def _in1d(np):
    def in1d(ar1, ar2, assume_unique=False, invert=False, **kwargs):
        return np.isin(ar1, ar2, assume_unique=assume_unique, invert=invert, **kwargs).ravel()

    in1d.__module__ = "numpy"
    in1d.__doc__ = "``np.isin(ar1, ar2, ...).ravel()``: NumPy's replacement for in1d."
    return in1d


def _msort(np):
    def msort(a):
        return np.sort(a, axis=0)

    msort.__module__ = "numpy"
    msort.__doc__ = "``np.sort(a, axis=0)``: NumPy's replacement for msort."
    return msort


def _compat_module(np):
    module = types.ModuleType(
        "numpy.compat",
        "Restored by mxcompat: MXNet reads numpy.compat.basestring (NumPy 2 removed numpy.compat).",
    )
    module.basestring = str
    return module


# name -> factory(numpy) of the value NumPy documents as the replacement.  Keep the module
# docstring's table in step.
NAMES = [
    ("bool", lambda np: bool),
    ("int", lambda np: int),
    ("float", lambda np: float),
    ("Inf", lambda np: float("inf")),
    ("PINF", lambda np: float("inf")),
    ("NINF", lambda np: float("-inf")),
    ("NAN", lambda np: float("nan")),
    ("NaN", lambda np: float("nan")),
    ("PZERO", lambda np: 0.0),
    ("NZERO", lambda np: -0.0),
    ("alltrue", lambda np: np.all),
    ("sometrue", lambda np: np.any),
    ("product", lambda np: np.prod),
    ("round_", lambda np: np.round),
    ("msort", _msort),
    ("compat", _compat_module),
    ("trapz", lambda np: np.trapezoid),
    ("in1d", _in1d),
] + [(name, functools.partial(_financial_maker, name)) for name in _FINANCIAL]

_lock = threading.Lock()
_added: "dict[str, object]" = {}  # name -> the object mxcompat put on numpy


def _has(np, name):
    if name in vars(np):
        return True
    # NumPy's module __getattr__ serves some deprecated names (with a warning) and raises
    # AttributeError for removed ones: only existence is asked here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(np, name)
        except AttributeError:
            return False
        return True


def missing(np=None):
    """The names of ``NAMES`` the given (default: installed) NumPy lacks."""
    np = np or _numpy()
    return [name for name, _ in NAMES if name not in _added and not _has(np, name)]


def restore(np=None):
    """Add the missing names to NumPy; never replaces one it has.  Returns the names added."""
    np = np or _numpy()
    if np is None:
        return []
    added = []
    with _lock:
        for name, factory in NAMES:
            if name in _added or _has(np, name):
                continue
            try:
                value = factory(np)
            except AttributeError:  # a replacement this NumPy lacks too: leave it missing
                continue
            setattr(np, name, value)
            _added[name] = value
            added.append(name)
    return added


def remove():
    """Take back exactly what ``restore`` added (names NumPy or the user since changed stay)."""
    np = sys.modules.get("numpy")
    with _lock:
        for name, value in list(_added.items()):
            if np is not None and vars(np).get(name) is value:
                delattr(np, name)
            del _added[name]


def added():
    """The names mxcompat added to NumPy in this process."""
    with _lock:
        return tuple(_added)


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy
