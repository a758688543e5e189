"""Import hooks: the one place mxcompat acts on an import, before or after a module's code runs.

One ``sys.meta_path`` finder serves two kinds of work.

* Before MXNet's code (``register``): MXNet 1.6+ reads ``numpy.bool``, ``numpy.PZERO``… and
  imports ``distutils`` while ``mxnet/__init__.py`` executes, so a few fixes cannot wait for a
  post-import hook.  When an MXNet distribution is really being imported (its module is
  created from a real spec), the finder's loader loads mxcompat's patches, runs the
  pre-import actions of those the user wants (so ``MXCOMPAT_DISABLE`` /
  ``MXCOMPAT_DISABLE_PATCHES`` and ``mxcompat.unpatch`` switch them off like any patch), lets
  MXNet's own loader run MXNet's code, and then runs what waits for ``mxnet``.
* After a module's code (``when_imported``): the registry applies the patches once
  ``mxnet`` has run, ``python_oo`` fixes MXNet's doc modules as each finishes loading, the
  NumPy opt-in waits for ``numpy``.  A callback runs at once if the module is already
  imported, else right after its code has run, inside the import that loads it (as wrapt's
  post-import hooks do, which this replaces: one finder, one order, one lock).

``import mxcompat`` puts the finder at the front of ``sys.meta_path`` and does nothing else
(NumPy and MXNet are not imported, nor mxcompat's patch modules and wrapt).  The finder never
loads a module itself, answers only for the names it waits for, and nothing happens where
MXNet is not installed.
"""

import _thread
import os
import sys

from . import settings

# Only what Python has loaded at start-up anyway (_thread, not threading): `import mxcompat`
# costs nearly nothing until MXNet's import starts.  facts and log come when they are needed.


_lock = _thread.RLock()
_actions = {}  # patch name -> (action(version), wanted(version)), run before mxnet's code
_waiting = {}  # module name -> [callback(module)], run once that module has been imported
# Re-entrancy guard, per thread and per module name: the finders asked for a name's real spec,
# or mxnet's pre-import actions, may import that same name again.  Only that name is passed
# through unhooked; another module imported meanwhile (NumPy, imported by the actions while
# someone waits for it) is still hooked.
_busy = _thread._local()
_on_import = None  # mxcompat's loader of its patches (install), called at `import mxnet`
_before_mxnet = False  # install() ran with mxcompat on: MXNet's import gets the pre-import work

LATE_IMPORT_KEY = "mxnet-imported-before-mxcompat"


class ImportRefused(ImportError):
    """Raised by a pre-import action that knows ``import mxnet`` cannot succeed (a library the
    dynamic linker will not find): passed on to the import as it is, one clear error in place of
    MXNet's.  Every other failure of ours steps aside."""


def register(name, action, wanted=None):
    """Run ``action(version)`` when ``import mxnet`` starts, if ``wanted(version)`` (the
    registry passes whether patch ``name`` is wanted and applies; ``None``: always).

    ``version`` is the release about to be imported, read from its ``libinfo.py``
    (``None`` if unknown).
    """
    with _lock:
        _actions[name] = (action, wanted)


def when_imported(name, callback):
    """Call ``callback(module)`` once module ``name`` is imported: now if it already is, else
    right after its code has run (once), inside the import statement that loads it.

    A callback that raises is logged and warned about once; the import goes on."""
    with _lock:
        module = sys.modules.get(name)
        if module is None or _initializing(module):
            _waiting.setdefault(name, []).append(callback)
            _insert_finder()
            return
    _call(callback, module)


def _initializing(module):
    spec = getattr(module, "__spec__", None)
    return spec is not None and bool(getattr(spec, "_initializing", False))


def _imported(module):
    name = getattr(module, "__name__", None)
    with _lock:
        ready = [(module, _waiting.pop(name, ()))]
        # A module waited for can still come in unhooked (a finder put in front of ours
        # later loads it itself): whatever has finished loading by now gets its callbacks.
        for other in [n for n in _waiting if n in sys.modules]:
            if not _initializing(sys.modules[other]):
                ready.append((sys.modules[other], _waiting.pop(other)))
    for loaded, callbacks in ready:
        for callback in callbacks:
            _call(callback, loaded)


def _call(callback, module):
    try:
        callback(module)
    except Exception:
        # Runs inside the user's import: nothing of ours may make it fail.
        _step_aside(
            ("post-import-failed", module.__name__, getattr(callback, "__qualname__", "")),
            "mxcompat could not finish its work after importing {module} ({error}); {module} "
            "is imported as it is",
            module=module.__name__,
        )


class MXNetImportFinder:
    """Finds nothing of its own.  For ``mxnet`` (the pre-import work) and for a module a
    callback waits for, it asks the finders behind it for the real spec and hands that back
    with a loader that does mxcompat's work around the module's own loader, then steps
    aside.  A lookup that only probes (``importlib.util.find_spec("mxnet")``, a failed
    ``import mxnet`` where MXNet is not installed) changes nothing."""

    _mxcompat_preimport = True  # recognised across reloads of this module

    def find_spec(self, fullname, path=None, target=None):
        # Asked for every import of the process: names nobody waits for return at once.
        before = fullname == "mxnet" and _before_mxnet
        if not before and fullname not in _waiting:
            return None
        busy = _busy_names()
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            spec = _real_spec(self, fullname, path, target)
            if before and _is_mxnet(spec):
                spec.loader = _HookedLoader(spec.loader, before=True)
            elif spec is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _HookedLoader(spec.loader, before=False)
            return spec
        except Exception:
            # A finder must never break the import it watches: the import system asks the
            # other finders itself.
            _logger().debug("mxcompat could not look up %s's spec", fullname, exc_info=True)
            return None
        finally:
            busy.discard(fullname)


def _busy_names():
    names = getattr(_busy, "names", None)
    if names is None:
        names = _busy.names = set()
    return names


def _insert_finder():
    # Under the lock.  Also where MXCOMPAT_DISABLE kept install() from adding it: an explicit
    # mxcompat.patch() still waits for mxnet (without the pre-import work).
    if not any(getattr(f, "_mxcompat_preimport", False) for f in sys.meta_path):
        sys.meta_path.insert(0, MXNetImportFinder())


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


def _step_aside(key, message, **values):
    from .log import step_aside

    return step_aside(key, message, **values)


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


class _HookedLoader:
    """A module's own loader, with mxcompat's work around it: for MXNet (``before``),
    mxcompat's patches registered and the pre-import actions run first when the module is
    made; for every hooked module, the callbacks waiting for it run once its code has run.

    The spec keeps this loader until ``exec_module`` (so the import comes back here after the
    module's code), which gives the module's loader back to ``__loader__`` and
    ``__spec__.loader`` before its code runs; everything else is delegated."""

    def __init__(self, loader, before):
        self._loader = loader
        self._before = before
        self._done = False

    def _prepare(self, spec):
        if self._before and not self._done:
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
        _imported(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _load_patches():
    if _on_import is None:
        return
    try:
        _on_import()
    except Exception:
        _step_aside(
            "load-failed",
            "mxcompat could not load its patches ({error}); mxnet is imported unpatched",
        )


def _run_guarded(spec):
    busy = _busy_names()
    busy.add("mxnet")
    try:
        run_actions(spec)
    except ImportRefused:
        raise
    except Exception:
        _step_aside(
            "preimport-failed",
            "mxcompat could not prepare mxnet's import ({error}); mxnet is imported without "
            "the NumPy/distutils fixes",
        )
    finally:
        busy.discard("mxnet")


def install(on_import=None):
    """Put the finder at the front of ``sys.meta_path`` (once per process).

    ``on_import()`` runs when an MXNet package is found for ``import mxnet``, before anything
    else (mxcompat registers its patches then); it returns whether it did anything."""
    global _on_import, _before_mxnet
    if on_import is not None:
        _on_import = on_import
    if settings.flag(settings.DISABLE):
        return
    with _lock:
        _before_mxnet = True
        _insert_finder()
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


def run_actions(spec=None):
    version = peek_version(spec)
    with _lock:
        todo = [(n, a) for n, (a, wanted) in _actions.items() if wanted is None or wanted(version)]
        if todo and failed_import_leftovers():
            warn_failed_import()
        for name, action in todo:
            try:
                action(version)
            except ImportRefused:
                raise
            except Exception:
                _step_aside(
                    ("preimport-failed", name),
                    "mxcompat's patch {name!r} could not prepare mxnet's import ({error}); "
                    "mxnet may fail to import or misbehave where it needed it",
                    name=name,
                )


_VERSION_RE = r"""^__version__\s*=\s*['"]([^'"]+)['"]"""


def peek_version(spec=None):
    """The version of the mxnet that is about to be imported (``spec``, or the one on
    ``sys.path``), without importing it.

    Every release 1.3.1 … 1.9.1 sets ``__version__ = "1.x.y"`` in ``mxnet/libinfo.py``.
    """
    import re

    from . import facts

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
                    return facts.parse_version(match.group(1))
    except Exception:
        _logger().debug("could not read mxnet's version before importing it", exc_info=True)
    return None
