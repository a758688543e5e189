"""The NumPy names MXNet's Python code uses, back where NumPy 1.24 … 2.x removed them.

MXNet 1.6–1.9 cannot even be imported on NumPy >= 1.24 (``mxnet/numpy/utils.py`` reads
``np.bool``) nor on NumPy 2 (``np.PZERO``, ``np.alltrue``, the financial functions…), and
other releases read removed names at run time (``np.Inf`` in the Gluon estimator,
``np.float`` in the ONNX exporter).  When an import of ``mxnet`` starts, mxcompat adds to
``numpy`` exactly the names below that the installed NumPy lacks; a name NumPy has is never
replaced, and nothing is added in a process that never imports mxnet.  The list is every
``numpy.X`` that the Python code of MXNet 1.3.1 … 1.9.1 reads and some NumPy from 1.14 to 2.4
lacks (``tests/patches/test_numpy_names.py`` re-derives it from the installed release's source with
``ast``).  Values are the replacements NumPy itself documents:

==============================  ==================================  ===================
name                            value                               removed in NumPy
==============================  ==================================  ===================
``bool``, ``int``, ``float``    the builtins ``bool``, ``int``,      1.24
                                ``float``
``Inf``, ``PINF``               ``inf``                             2.0
``NINF``                        ``-inf``                            2.0
``NAN``, ``NaN``                ``nan``                             2.0
``PZERO``, ``NZERO``            ``0.0``, ``-0.0``                   2.0
``alltrue``, ``sometrue``       ``np.all``, ``np.any``              2.0
``product``, ``round_``         ``np.prod``, ``np.round``           2.0
``msort(a)``                    ``np.sort(a, axis=0)``              2.0
``compat``                      a module with ``basestring = str``  2.0
``trapz``                       ``np.trapezoid``                    2.4
``in1d(a, b, ...)``             ``np.isin(a, b, ...).ravel()``      2.4
``mirr``, ``npv``, ``pmt``,     functions that raise                1.20 (stubs), 2.0
``ppmt``, ``pv``, ``rate``      ``RuntimeError`` naming
                                ``numpy-financial`` when called
==============================  ==================================  ===================

(NumPy 2 has ``np.bool`` again, as ``np.bool_``: it is then left alone.)  The financial
functions behave as NumPy 1.20–1.26's own stubs did: MXNet 1.7+ only re-exports them, so
import works and a call says to use ``numpy-financial``.

The names are restored by the ``sys.meta_path`` finder of ``_core.hooks`` (patch
``numpy_names``); ``MXCOMPAT_DISABLE=1`` or ``MXCOMPAT_DISABLE_PATCHES=numpy_names`` turns
this off and ``mxcompat.unpatch("numpy_names")`` removes the names again.
"""

import functools
import sys
import threading
import types
import warnings

from .._core import hooks
from .._core.log import warn_once
from .._core.registry import Patch, record, register

PATCH = "numpy_names"

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
_added = {}  # name -> the object mxcompat put on numpy
_restored_before_mxnet = False  # the finder restored the names as mxnet's import began


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
    if added:
        record(PATCH)
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


def _before_mxnet(version):
    # Runs from the meta_path finder when `import mxnet` starts.
    global _restored_before_mxnet
    restore()
    _restored_before_mxnet = True


def _on_apply():
    # mxnet is imported: either the finder already restored the names (nothing to do), or
    # mxnet was imported before mxcompat and loaded without them.
    late = restore()
    if late and not _restored_before_mxnet:
        warn_once(
            hooks.LATE_IMPORT_KEY,
            "mxnet was imported before mxcompat, so it loaded without the NumPy names "
            "it needs (numpy.%s); mxcompat added them now, but import mxcompat before "
            "mxnet (first line of the program), or start the program with "
            "`mxcompat run`." % ", numpy.".join(late),
        )


register(
    Patch(
        PATCH,
        "The NumPy names MXNet's Python code reads, back where NumPy 1.24 … 2.x removed them.",
        on_apply=_on_apply,
        on_remove=remove,
        before_import=_before_mxnet,
    )
)
