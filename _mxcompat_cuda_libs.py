"""A plain ``import mxnet`` of a CUDA wheel finds its CUDA 11 libraries: the one thing of
mxcompat that ``mxcompat-cuda-libs.pth`` brings to an environment where ``mxcompat install
mxnet-cu11X==V`` wrote it (``mxcompat/cuda/plain_import.py``).

The ``.pth`` calls ``install()`` at the start of every interpreter of that environment.  It puts
one finder at the front of ``sys.meta_path`` and imports nothing: the finder answers no name but
``mxnet``, and only when ``mxnet`` is really loaded does it load mxcompat's CUDA code
(``mxcompat/cuda/libs.py``) and run what the patch ``cuda_libs`` runs: the libraries
``libmxnet.so`` needs that the system lacks, from the ``nvidia-*-cu11`` packages, with the same
priorities and switches (``MXCOMPAT_CUDA_LIBS``, ``MXCOMPAT_DISABLE``,
``MXCOMPAT_DISABLE_PATCHES=cuda_libs``).  On a Python or NumPy newer than MXNet's, also the
two things without which its import fails there (``importable``).  Nothing else: no other
patch, no ``mxcompat`` in ``sys.modules``, MXNet as it is.  Where ``import mxcompat`` came
first, its own hook does the work and this one steps aside.

A module of its own, beside the package rather than in it: importing anything of the package
``mxcompat`` runs its ``__init__``, which puts every patch's hook in place, and a later
``import mxcompat`` must still find that undone.  So mxcompat's CUDA modules are loaded here
under a private name (``_mxcompat_cuda_libs.mxcompat.…``), from the package folder beside this
file.

PYTEST_DONT_REWRITE
"""

import _thread
import os
import sys

# pytest marks the modules of its plugins' distributions for assertion rewriting (mxcompat's
# plugin ships beside this module) and warns about one already imported, as this one always is
# where the .pth is: an error under `filterwarnings = error`.  Its opt-out is the marker above,
# which -OO takes away with the docstring.
if __doc__ is None:
    __doc__ = "PYTEST_DONT_REWRITE"

PATCH = "cuda_libs"
# The package's modules, loaded under this name (see the docstring).
_ALIAS = __name__ + ".mxcompat"

_busy = _thread._local()  # per thread: asking the other finders for mxnet's spec


def install():
    """Put the finder at the front of ``sys.meta_path``, once per process."""
    for finder in sys.meta_path:
        if getattr(finder, "_mxcompat_cuda_libs", False):
            return
    sys.meta_path.insert(0, Finder())


class Finder:
    """Answers ``mxnet`` only: the spec the finders behind it give, with a loader that loads
    the CUDA libraries first.  A lookup that only probes loads nothing."""

    _mxcompat_cuda_libs = True

    def find_spec(self, fullname, path=None, target=None):
        # Asked for every import of the process: every other name returns at once.
        if fullname != "mxnet" or "mxcompat" in sys.modules or getattr(_busy, "on", False):
            return None
        _busy.on = True
        try:
            spec = _real_spec(fullname, path, target)
        except Exception:
            return None  # the import system asks the other finders itself
        finally:
            _busy.on = False
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return None
        # A regular package only: a stray `mxnet` folder (a namespace package) is not MXNet.
        if not os.path.basename(spec.origin or "").startswith("__init__."):
            return None
        spec.loader = _Loader(spec.loader)
        return spec


def _real_spec(fullname, path, target):
    for finder in list(sys.meta_path):
        if getattr(finder, "_mxcompat_cuda_libs", False):
            continue
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None:
            spec = find_spec(fullname, path, target)
            if spec is not None:
                return spec
    return None


class _Loader:
    """MXNet's own loader, the libraries loaded before its code.  The work is done when the
    module is made, not in ``find_spec``: finders run under the import system's global lock,
    and loading modules there can deadlock with another importing thread."""

    def __init__(self, loader):
        self._loader = loader
        self._done = False

    def create_module(self, spec):
        self._prepare()
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        # MXNet's code sees its own loader (``__loader__``, ``__spec__.loader``).
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        self._prepare()
        self._loader.exec_module(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def _prepare(self):
        if self._done:
            return
        self._done = True
        if "mxcompat" not in sys.modules:
            preload()
            importable()


def preload():
    """What the patch ``cuda_libs`` does before MXNet's code, with mxcompat's own modules and
    switches: returns ``{soname: path}`` of what was loaded from the pip packages.  A library
    found nowhere is one ``ImportError`` naming it and its pip package; any other failure steps
    aside with one warning (MXNet then loads as it would without this)."""
    try:
        settings = _module("_core.settings")
        if settings.flag(settings.DISABLE) or PATCH in settings.items(settings.DISABLE_PATCHES):
            return {}
        libs = _module("cuda.libs")
        library = libs.library()
        if library is None or not libs.cuda_build(library):
            return {}
        try:
            return libs.preload(library, libs.mode())
        except libs.LibraryMissing as exc:
            missing = str(exc)
    except Exception as exc:
        # Ours failed (an ImportError of a damaged install included): MXNet's import goes on.
        _step_aside(exc)
        return {}
    # Outside the handlers: the one error, with nothing chained to it.
    raise ImportError(missing)


def importable():
    """Where this Python or NumPy is newer than any MXNet was released for, the two things
    without which ``import mxnet`` itself fails, and nothing else: NumPy's removed names that
    MXNet's code reads at import (patch ``numpy_names``: ``np.PZERO`` on NumPy 2) and
    ``distutils.version`` on Python 3.12+ (patch ``distutils``).  Each only where it is
    missing, each switched off as its patch is; returns the names of those applied."""
    applied = []
    try:
        settings = _module("_core.settings")
        if settings.flag(settings.DISABLE):
            return applied
        off = settings.items(settings.DISABLE_PATCHES)
        if "numpy_names" not in off and _module("_core.numpy_removed").restore():
            applied.append("numpy_names")
        if "distutils" not in off:
            fallback = _module("_core.distutils_fallback")
            if fallback.needed():
                fallback.install()
                applied.append("distutils")
    except Exception as exc:
        _step_aside(exc)
    return applied


def _module(name):
    """mxcompat's module ``name`` (``"cuda.libs"``), loaded under the private name."""
    from importlib import import_module

    if _ALIAS not in sys.modules:
        from importlib.machinery import ModuleSpec

        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mxcompat")
        spec = ModuleSpec(_ALIAS, None, is_package=True)
        spec.submodule_search_locations = [folder]
        package = type(sys)(_ALIAS, "mxcompat's package folder, without its __init__")
        package.__spec__ = spec
        package.__path__ = spec.submodule_search_locations
        package.__package__ = _ALIAS
        sys.modules[_ALIAS] = package
    return import_module(_ALIAS + "." + name)


def _step_aside(exc):
    # In the except block: mxcompat's log records the traceback at debug level.
    template = (
        "mxcompat could not load the CUDA libraries before mxnet ({error}); mxnet is imported "
        "as it is"
    )
    try:
        _module("_core.log").step_aside(("plain-import-failed", PATCH), template)
    except Exception:
        import warnings

        error = "%s: %s" % (type(exc).__name__, exc)
        warnings.warn(template.format(error=error), RuntimeWarning, stacklevel=2)
