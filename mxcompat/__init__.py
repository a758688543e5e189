"""mxcompat: ``import mxcompat`` and the known traps of legacy MXNet 1.x code are gone.

Importing mxcompat never imports mxnet: the patches land when mxnet is imported (or at once
if it already is).  ``MXCOMPAT_DISABLE=1`` turns every patch off,
``MXCOMPAT_DISABLE_PATCHES=labels,bare_names`` the named ones.

PYTEST_DONT_REWRITE
"""

# `import mxcompat` before `import mxnet` only puts _core.hooks' finder in sys.meta_path
# (a few standard modules Python has loaded anyway).  The patch modules, wrapt (whose 2.x
# imports asyncio, ~13 ms) and the public API are loaded when MXNet's import starts, when
# mxnet is already imported, or at the first use of a public name (module __getattr__).
import _thread
import sys as _sys

from ._core import hooks as _hooks
from ._core import settings as _settings

# pytest marks the packages of its plugins for assertion rewriting and warns about one already
# imported, which `mxcompat run -m pytest` always has done (an error under `filterwarnings =
# error`: no test would run).  Its documented opt-out is the marker in the docstring above;
# under -OO there is no docstring, so the marker stands alone.
if __doc__ is None:
    __doc__ = "PYTEST_DONT_REWRITE"

from ._core import about as _about

__version__ = _about.VERSION

# The public API is _PUBLIC below, listed once; __all__ is made from it.  A type checker
# cannot run that table, so it reads the same names here (py.typed), each where it lives, with
# its annotations: tests/core/test_annotations.py holds the two equal.  At run time they are
# bound lazily (module __getattr__ below), so nothing more is imported.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._core import registry as _registry
    from ._core.facts import SUPPORTED as SUPPORTED
    from ._core.log import MXCompatWarning as MXCompatWarning
    from ._core.registry import patch as patch
    from ._core.registry import patched as patched
    from ._core.registry import unpatch as unpatch
    from .convert import to_gluon as to_gluon
    from .convert import to_module as to_module
    from .convert.quantize import quantize as quantize
    from .freeze import freeze as freeze
    from .freeze import frozen as frozen
    from .freeze import frozen_patterns as frozen_patterns
    from .freeze import frozen_report as frozen_report
    from .freeze import is_frozen as is_frozen
    from .freeze import unfreeze as unfreeze
    from .numpy_legacy import numpy_legacy as numpy_legacy
    from .onnx.in_memory import to_onnx as to_onnx
    from .torch.convert import to_torch as to_torch
    from .torch.optim import to_torch_optimizer as to_torch_optimizer

    patch_names = _registry.names

# The public API: name -> (module, attribute).
_PUBLIC = {
    "MXCompatWarning": ("_core.log", "MXCompatWarning"),
    "SUPPORTED": ("_core.facts", "SUPPORTED"),
    "freeze": ("freeze", "freeze"),
    "frozen": ("freeze", "frozen"),
    "frozen_patterns": ("freeze", "frozen_patterns"),
    "frozen_report": ("freeze", "frozen_report"),
    "is_frozen": ("freeze", "is_frozen"),
    "numpy_legacy": ("numpy_legacy", "numpy_legacy"),
    "patch": ("_core.registry", "patch"),
    "patch_names": ("_core.registry", "names"),
    "patched": ("_core.registry", "patched"),
    "quantize": ("convert.quantize", "quantize"),
    "to_gluon": ("convert", "to_gluon"),
    "to_module": ("convert", "to_module"),
    "to_onnx": ("onnx.in_memory", "to_onnx"),
    # torch itself is imported at the first call.
    "to_torch": ("torch.convert", "to_torch"),
    "to_torch_optimizer": ("torch.optim", "to_torch_optimizer"),
    "unfreeze": ("freeze", "unfreeze"),
    "unpatch": ("_core.registry", "unpatch"),
}
# Hidden from type checkers, which read the names above (each `import X as X` or assignment is
# a re-export).
if not TYPE_CHECKING:
    __all__ = list(_PUBLIC) + ["__version__"]


class _Package(type(_sys)):  # type: ignore[misc]  # types.ModuleType, without importing types
    """The package's module type: ``freeze`` and ``numpy_legacy`` are each a submodule and the
    public function it holds.  Importing the submodule (``from mxcompat.freeze import report``)
    makes Python set the package's attribute to the module, which would leave
    ``mxcompat.freeze(...)`` not callable until the next load; the function is kept instead."""

    def __setattr__(self, name, value):
        if (
            _PUBLIC.get(name) == (name, name)
            and isinstance(value, type(_sys))
            and value.__name__ == __name__ + "." + name
        ):
            value = getattr(value, name)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

# The opt-in for users' own NumPy code registers no patch, but reads MXCOMPAT_NUMPY_LEGACY when
# imported: it is loaded with the patches (whose stacking order is _core.registry.ORDER).
_AFTER_PATCHES = ("numpy_legacy",)
# convert.quantize registers nothing: imported at the first use of `quantize`.

_load_lock = _thread.RLock()
_loaded = False  # every patch module registered, public names bound
_loading = False  # _load is running (a patch module's `from . import x` re-enters)


def _load():
    """Register every patch, bind the public names and apply what the environment asks for
    (what ``import mxcompat`` did at once before).  Returns whether it did so now."""
    global _loaded, _loading
    if _loaded:
        return False
    with _load_lock:
        if _loaded or _loading:
            return False
        _loading = True
        try:
            from importlib import import_module

            from ._core.registry import ORDER

            for module in tuple("patches." + name for name in ORDER) + _AFTER_PATCHES:
                import_module(__name__ + "." + module)
            names = globals()
            for public, (module, attr) in _PUBLIC.items():
                if __name__ + "." + module in _sys.modules:
                    names[public] = getattr(_sys.modules[__name__ + "." + module], attr)
            # Under the lock: another thread's patch()/unpatch() comes after, as it came
            # after `import mxcompat`.
            _sys.modules[__name__ + "._core.registry"].auto_patch()
            _loaded = True
        finally:
            _loading = False
    return True


# Hidden from type checkers, which would otherwise take any misspelt name for a valid one.
if not TYPE_CHECKING:

    def __getattr__(name):
        # A public name, or a submodule asked of the package (`from mxcompat import freeze`),
        # comes with every patch registered.
        if name.startswith("__"):
            raise AttributeError("module %r has no attribute %r" % (__name__, name))
        _load()
        names = globals()
        if name not in names and name in _PUBLIC:
            from importlib import import_module

            module, attr = _PUBLIC[name]
            names[name] = getattr(import_module(__name__ + "." + module), attr)
        try:
            return names[name]
        except KeyError:
            raise AttributeError("module %r has no attribute %r" % (__name__, name)) from None


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


_hooks.install(_load)
# Settings from the environment are read (and a bad one warned about) at `import mxcompat`, as
# always: loading at once costs only the programs that set them.
if "mxnet" in _sys.modules or _settings.any_read_at_import():
    _load()
