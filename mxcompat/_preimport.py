"""Work that must be done before MXNet's own code runs: one ``sys.meta_path`` finder.

Most fixes are patches applied after ``import mxnet`` (``_patching``).  A few cannot wait:
MXNet 1.6+ reads ``numpy.bool``, ``numpy.PZERO``… and imports ``distutils`` while
``mxnet/__init__.py`` executes.  ``import mxcompat`` therefore puts this finder at the front of
``sys.meta_path``, and does nothing else (NumPy and MXNet are not imported).  When an import
of ``mxnet`` starts, the finder runs the pre-import actions of the patches the user wants
(so ``MXCOMPAT_DISABLE`` / ``MXCOMPAT_DISABLE_PATCHES`` and ``mxcompat.unpatch`` switch them
off like any patch), then steps aside: it never finds or loads a module itself.
"""
import os
import re
import sys
import threading
from collections import OrderedDict

from . import _compat, _patching
from ._log import logger, warn_once

_lock = threading.RLock()
_actions = OrderedDict()      # patch name -> action(version), run before mxnet's code
_busy = threading.local()     # re-entrancy guard: an action may import things itself

LATE_IMPORT_KEY = "mxnet-imported-before-mxcompat"


def register(name, action):
    """Run ``action(version)`` when ``import mxnet`` starts, if patch ``name`` is wanted.

    ``version`` is the release about to be imported, read from its ``libinfo.py``
    (``None`` if unknown).
    """
    with _lock:
        _actions[name] = action


class MXNetImportFinder(object):
    """Finds nothing; runs the pre-import actions when an import of ``mxnet`` starts."""

    _mxcompat_preimport = True   # recognised across reloads of this module

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "mxnet" and not getattr(_busy, "on", False):
            _busy.on = True
            try:
                run_actions()
            except Exception:  # pylint: disable=broad-except
                # A finder must never break the import it watches.
                logger.debug("mxcompat pre-import actions failed", exc_info=True)
            finally:
                _busy.on = False
        return None

    # Python < 3.4 style; never used by the Pythons mxcompat supports, kept for finders
    # that call it anyway.
    def find_module(self, fullname, path=None):
        self.find_spec(fullname, path)
        return None


def install():
    """Put the finder at the front of ``sys.meta_path`` (once per process)."""
    if _patching._env_flag(_patching.ENV_DISABLE):
        return
    with _lock:
        if not any(getattr(f, "_mxcompat_preimport", False) for f in sys.meta_path):
            sys.meta_path.insert(0, MXNetImportFinder())
    if failed_import_leftovers():
        warn_failed_import()


def failed_import_leftovers():
    """True when an earlier ``import mxnet`` failed: its submodules are still loaded."""
    if "mxnet" in sys.modules:
        return False
    return any(name.startswith("mxnet.") for name in list(sys.modules))


def warn_failed_import():
    warn_once(LATE_IMPORT_KEY,
              "an `import mxnet` failed before mxcompat was imported, and its half-imported "
              "modules are still loaded, so mxcompat cannot make that import work reliably. "
              "Import mxcompat before mxnet (first line of the program), or start the program "
              "with `mxcompat run`.")


def wanted(name, version):
    """Whether the pre-import action of patch ``name`` should run for ``version``."""
    with _patching._lock:
        if name not in _patching._wanted:
            return False
        patch = _patching._registry.get(name)
    if version is None:
        return True   # an MXNet 1.x fork without libinfo: act as for 1.x
    return _compat.is_supported(version) and (patch is None or patch.applies_to(version))


def run_actions():
    version = peek_version()
    with _lock:
        todo = [(n, a) for n, a in _actions.items() if wanted(n, version)]
        if todo and failed_import_leftovers():
            warn_failed_import()
        for name, action in todo:
            try:
                action(version)
            except Exception:  # pylint: disable=broad-except
                logger.debug("mxcompat pre-import action %s failed", name, exc_info=True)


_VERSION_RE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.M)


def peek_version():
    """The version of the mxnet that is about to be imported, without importing it.

    Every release 1.3.1 … 1.9.1 sets ``__version__ = "1.x.y"`` in ``mxnet/libinfo.py``.
    """
    try:
        from importlib.machinery import PathFinder
        spec = PathFinder.find_spec("mxnet")
        locations = list(getattr(spec, "submodule_search_locations", None) or [])
        for location in locations:
            path = os.path.join(location, "libinfo.py")
            if os.path.isfile(path):
                with open(path) as f:
                    match = _VERSION_RE.search(f.read())
                if match:
                    return _compat.parse_version(match.group(1))
    except Exception:  # pylint: disable=broad-except
        logger.debug("could not read mxnet's version before importing it", exc_info=True)
    return None
