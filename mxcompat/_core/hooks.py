"""Work that must be done before MXNet's own code runs: one ``sys.meta_path`` finder.

Most fixes are patches applied after ``import mxnet`` (``registry``).  A few cannot wait:
MXNet 1.6+ reads ``numpy.bool``, ``numpy.PZERO``… and imports ``distutils`` while
``mxnet/__init__.py`` executes.  ``import mxcompat`` therefore puts this finder at the front of
``sys.meta_path``, and does nothing else (NumPy and MXNet are not imported, nor mxcompat's
patch modules and wrapt).  When an MXNet distribution is really being imported (its module is
created from a real spec), its loader loads mxcompat's patches, runs the pre-import actions of
those the user wants (so ``MXCOMPAT_DISABLE`` / ``MXCOMPAT_DISABLE_PATCHES`` and
``mxcompat.unpatch`` switch them off like any patch), lets MXNet's own loader run MXNet's code,
and then applies the patches.  It never loads MXNet itself, and nothing happens where MXNet is
not installed.
"""

import _thread
import os
import sys

from . import settings

# Only what Python has loaded at start-up anyway (_thread, not threading): `import mxcompat`
# costs nearly nothing until MXNet's import starts.  _compat, _patching and _log
# come when they are needed.


_lock = _thread.RLock()
_actions = {}  # patch name -> action(version), run before mxnet's code (in order)
_busy = _thread._local()  # re-entrancy guard: an action may import things itself
_on_import = None  # mxcompat's loader of its patches (install), called at `import mxnet`

LATE_IMPORT_KEY = "mxnet-imported-before-mxcompat"


def register(name, action):
    """Run ``action(version)`` when ``import mxnet`` starts, if patch ``name`` is wanted.

    ``version`` is the release about to be imported, read from its ``libinfo.py``
    (``None`` if unknown).
    """
    with _lock:
        _actions[name] = action


class MXNetImportFinder:
    """Finds nothing of its own.  For ``mxnet`` it asks the finders behind it for the real
    spec and hands that back with a loader that runs the pre-import actions when the module
    is really created (``create_module``), then steps aside.  A lookup that only probes
    (``importlib.util.find_spec("mxnet")``, a failed ``import mxnet`` where MXNet is not
    installed) changes nothing."""

    _mxcompat_preimport = True  # recognised across reloads of this module

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "mxnet" or getattr(_busy, "on", False):
            return None
        _busy.on = True
        try:
            spec = _real_spec(self, fullname, path, target)
            if _is_mxnet(spec):
                spec.loader = _PreImportLoader(spec.loader)
            return spec
        except Exception:  # pylint: disable=broad-except
            # A finder must never break the import it watches: the import system asks the
            # other finders itself.
            _logger().debug("mxcompat could not look up mxnet's spec", exc_info=True)
            return None
        finally:
            _busy.on = False


def _is_mxnet(spec):
    # A regular package only: a stray `mxnet` folder on sys.path (a namespace package) is not
    # MXNet.
    origin = getattr(spec, "origin", None) or ""
    return (
        spec is not None
        and hasattr(spec.loader, "exec_module")
        and os.path.basename(origin).startswith("__init__.")
    )


def _logger():
    from .log import logger

    return logger


def _warn_once(key, message):
    from .log import warn_once

    return warn_once(key, message)


def _real_spec(me, fullname, path, target):
    for finder in list(sys.meta_path):
        if getattr(finder, "_mxcompat_preimport", False) or finder is me:
            continue
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None:
            spec = find_spec(fullname, path, target)
            if spec is not None:
                return spec
    return None


class _PreImportLoader:
    """MXNet's own loader, with mxcompat's patches registered and the pre-import actions run
    first when the module is made, and the patches applied once MXNet's ``__init__`` has run.

    The spec keeps this loader until ``exec_module`` (so the import comes back here after
    MXNet's code), which gives MXNet's loader back to ``mxnet.__loader__`` and
    ``mxnet.__spec__.loader`` before MXNet's code runs; everything else is delegated."""

    def __init__(self, loader):
        self._loader = loader
        self._done = False

    def _prepare(self, spec):
        if not self._done:
            self._done = True
            # Not in find_spec: the import system calls finders holding its global lock, and
            # another thread loading mxcompat's modules needs that lock to finish.
            _load_patches()
            _run_guarded(spec)

    def create_module(self, spec):
        self._prepare(spec)
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        # Also reached when another loader chains to this one (wrapt's post-import hook
        # finder, importlib.util.LazyLoader).
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        self._prepare(spec)
        self._loader.exec_module(module)
        # wrapt's post-import hook does the same if its finder saw this import; it does not
        # when mxcompat's patches were registered only now (a second _sync changes nothing).
        patching = sys.modules.get(__package__ + ".registry")
        if patching is not None:
            patching._on_mxnet_import(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _load_patches():
    if _on_import is None:
        return
    try:
        _on_import()
    except Exception as exc:  # pylint: disable=broad-except
        _logger().debug("mxcompat could not load its patches", exc_info=True)
        _warn_once(
            "load-failed",
            "mxcompat could not load its patches (%s: %s); mxnet is "
            "imported unpatched" % (type(exc).__name__, exc),
        )


def _run_guarded(spec):
    _busy.on = True
    try:
        run_actions(spec)
    except Exception as exc:  # pylint: disable=broad-except
        _logger().debug("mxcompat pre-import actions failed", exc_info=True)
        _warn_once(
            "preimport-failed",
            "mxcompat could not prepare mxnet's import (%s: %s); "
            "mxnet is imported without the NumPy/distutils fixes" % (type(exc).__name__, exc),
        )
    finally:
        _busy.on = False


def install(on_import=None):
    """Put the finder at the front of ``sys.meta_path`` (once per process).

    ``on_import()`` runs when an MXNet package is found for ``import mxnet``, before anything
    else (mxcompat registers its patches then); it returns whether it did anything."""
    global _on_import
    if on_import is not None:
        _on_import = on_import
    if settings.flag(settings.DISABLE):
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
    _warn_once(
        LATE_IMPORT_KEY,
        "an `import mxnet` failed before mxcompat was imported, and its half-imported "
        "modules are still loaded, so mxcompat cannot make that import work reliably. "
        "Import mxcompat before mxnet (first line of the program), or start the program "
        "with `mxcompat run`.",
    )


def wanted(name, version):
    """Whether the pre-import action of patch ``name`` should run for ``version``."""
    from . import facts as _compat
    from . import registry as _patching

    if not _patching.is_wanted(name):
        return False
    patch = _patching.get(name)
    if version is None:
        return True  # an MXNet 1.x fork without libinfo: act as for 1.x
    return _compat.is_supported(version) and (patch is None or patch.applies_to(version))


def run_actions(spec=None):
    version = peek_version(spec)
    with _lock:
        todo = [(n, a) for n, a in _actions.items() if wanted(n, version)]
        if todo and failed_import_leftovers():
            warn_failed_import()
        for name, action in todo:
            try:
                action(version)
            except Exception as exc:  # pylint: disable=broad-except
                _logger().debug("mxcompat pre-import action %s failed", name, exc_info=True)
                _warn_once(
                    ("preimport-failed", name),
                    "mxcompat's patch %r could not prepare mxnet's import (%s: %s); "
                    "mxnet may fail to import or misbehave where it needed it"
                    % (name, type(exc).__name__, exc),
                )


_VERSION_RE = r"""^__version__\s*=\s*['"]([^'"]+)['"]"""


def peek_version(spec=None):
    """The version of the mxnet that is about to be imported (``spec``, or the one on
    ``sys.path``), without importing it.

    Every release 1.3.1 … 1.9.1 sets ``__version__ = "1.x.y"`` in ``mxnet/libinfo.py``.
    """
    import re

    from . import facts as _compat

    try:
        if spec is None:
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec("mxnet")
        locations = list(getattr(spec, "submodule_search_locations", None) or [])
        for location in locations:
            path = os.path.join(location, "libinfo.py")
            if os.path.isfile(path):
                with open(path) as f:
                    match = re.search(_VERSION_RE, f.read(), re.M)
                if match:
                    return _compat.parse_version(match.group(1))
    except Exception:  # pylint: disable=broad-except
        _logger().debug("could not read mxnet's version before importing it", exc_info=True)
    return None
