"""The patch lifecycle: a registry of named patches, applied to mxnet when it is imported.

Modelled on ddtrace's patch()/unpatch() and OpenTelemetry's instrumentors; the patches land
from ``hooks.when_imported("mxnet", ...)``.  Each patch is a list of targets (a module, a
dotted attribute, a wrapt wrapper).  What the user wants active (``_wanted``) is kept apart
from what is applied (``_active``, in registry order); ``_sync`` makes the second match the
first.  Because two patches may wrap the same function (``Module.bind``), patches are always
stacked in registry order, and removing one unwinds the ones stacked above it and re-applies
them: every ``unpatch`` leaves the exact original objects behind (``Module.bind is
original_bind``).

A patch's *hot* targets (functions a training loop calls every step) are applied only while
the patch says it has work there (``Patch.armed``), so a step costs nothing when it has none;
``rearm`` re-reads that after the patch's own state changed (``_hot``).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict

from . import facts, hooks, settings
from .log import forget, logger, step_aside, warn_once
from .stacking import check_hot, foreign_wrapper, install, restore

# Every patch mxcompat has (each declared in mxcompat/patches/<name>.py), in the order they
# stack: the registry keeps this order whatever order the patch modules are imported in.  It
# lives here, not in the patches' package, because it is the registry's knowledge (register
# refuses a name it does not hold) and the core imports nothing above it.
ORDER = (
    "bare_names",
    "labels",
    "onednn_fc_bias",  # below freeze: its Module.bind sees the registry's names among the fixed
    "freeze",
    "frozen_statistics",
    "fixed_param_names",
    "convert",
    "distutils",
    "numpy_names",
    "numpy2",
    "ndarray_to_numpy",
    "unbound_get_params",
    "int_division",
    "bfloat16_name",
    "onnx",
    "trainer_kvstore_init",
    "kvstore_server",
    "autograd_threads",
    "dataloader_teardown",
    "dataloader_start_method",
    "dataloader_spawn",  # over dataloader_start_method: both stand in for the same module
    "scipy_chisquare",
    "cuda_libs",
    "gpu_arch",
    "exec_stack",
    "operator_cache",
    "checked_loads",
    "python_oo",  # last: applies under -OO only
)

# RLock: a patch's on_apply may call back into the registry.
_lock = threading.RLock()
_registry = OrderedDict()  # name -> Patch, in the order patches stack (ORDER)
_RANK = dict((name, rank) for rank, name in enumerate(ORDER))
_wanted = set()  # names the user wants active
_active = OrderedDict()  # name -> [applied target records], in stacking order
_hot = {}  # name -> [applied records of its hot targets], for an active patch that is armed
_broken = {}  # name -> why it could not be applied (warned once, not retried)
_hook_registered = False


class Target:
    """One attribute a patch changes.

    ``wrapper`` (a wrapt wrapper ``(wrapped, instance, args, kwargs)``) wraps an existing
    function; ``proxy`` (``proxy(original)`` returning what stands in for it: a
    ``wrapt.ObjectProxy``, or a plain function naming it in ``__wrapped__``) does the same
    where a call must cost less than a wrapt ``FunctionWrapper`` (a function MXNet calls once
    per operator); ``new`` adds an attribute MXNet does not have (e.g.
    ``Module.to_gluon``).  ``optional`` targets are skipped when the release lacks the
    attribute.  ``hot``: on a training step's path, applied only while the patch is armed
    (``Patch.armed``); no other patch may target the same attribute, since an armed target
    lands on top of whatever is applied then.
    """

    def __init__(self, module, path, wrapper=None, new=None, optional=False, proxy=None, hot=False):
        assert [wrapper, new, proxy].count(None) == 2
        assert not (hot and new is not None)
        self.module = module
        self.path = path
        # Split once: a hot target is applied again at every arming, and names split anew
        # each time were kept (tracemalloc: 7 strings more per arming, without end).
        self.parts = tuple(path.split("."))
        self.wrapper = wrapper
        self.new = new
        self.optional = optional
        self.proxy = proxy
        self.hot = hot


class Patch:
    """A named, independently (un)patchable fix.

    ``since``: the first MXNet release the patch applies to (``None``: every supported one).
    ``when``: a condition of this process beyond the release (Python 3.12+, ``-OO``, NumPy 2,
    an MKLDNN build), asked each time; where it is false, ``patched()`` does not list the patch.
    ``on_apply``/``on_remove``: extra work beyond the targets (e.g. installing a hook).
    ``before_import``: ``action(version)`` run when ``import mxnet`` starts, before MXNet's
    code, if the patch is wanted and applies to that release (``hooks.register``).
    ``armed``: whether the ``hot`` targets have work to do now (``None``: always); asked
    when the patch is applied and at each ``rearm``, so it must be cheap and take no lock.
    """

    def __init__(
        self,
        name,
        doc,
        targets=(),
        since=None,
        on_apply=None,
        on_remove=None,
        when=None,
        before_import=None,
        armed=None,
    ):
        self.name = name
        self.doc = doc
        self.targets = list(targets)
        self.since = since
        self.on_apply = on_apply
        self.on_remove = on_remove
        self.when = when
        self.before_import = before_import
        self.armed = armed

    def applies_to(self, version):
        return (self.since is None or facts.since(self.since, version)) and (
            self.when is None or bool(self.when())
        )


# Traps handled: how often each patch changed what MXNet would have done (a label dropped,
# a SIGFPE turned into ZeroDivisionError...).  The pytest plugin lists them per test run.
_handled = {}
_handled_lock = threading.Lock()
_listeners = []


def record(name):
    """Patch ``name`` just handled a trap.  Called where a patch acts (warns, raises, serves
    a value), never on the untouched path, so it costs nothing where nothing is handled."""
    with _handled_lock:
        _handled[name] = _handled.get(name, 0) + 1
    for listener in tuple(_listeners):
        listener(name)


def add_listener(listener):
    """Call ``listener(name)`` each time patch ``name`` handles a trap (the pytest plugin)."""
    _listeners.append(listener)


def remove_listener(listener):
    if listener in _listeners:
        _listeners.remove(listener)


def handled():
    """``{patch name: times it handled a trap}`` in this process."""
    with _handled_lock:
        return dict(_handled)


def register(patch):
    """Add a patch to the registry (import-time), at its place in ``ORDER``: the
    stacking order does not depend on which module happened to import which first."""
    if patch.name not in _RANK:
        raise ValueError("mxcompat: patch %r is not in mxcompat._core.registry.ORDER" % patch.name)
    with _lock:
        check_hot(patch, _registry.values())
        _registry[patch.name] = patch
        for name in sorted(_registry, key=_RANK.__getitem__):
            _registry.move_to_end(name)
    if patch.before_import is not None:
        hooks.register(
            patch.name, patch.before_import, lambda version: _wanted_before_import(patch, version)
        )
    return patch


def _wanted_before_import(patch, version):
    """Whether ``patch``'s pre-import action should run for the release about to load."""
    if not is_wanted(patch.name):
        return False
    if version is None:
        return True  # an MXNet 1.x fork without libinfo: act as for 1.x
    return facts.is_supported(version) and patch.applies_to(version)


def names() -> tuple[str, ...]:
    """Every registered patch name, in stacking order."""
    return tuple(_registry)


def get(name):
    """The registered ``Patch`` named ``name`` (``None`` if there is none)."""
    return _registry.get(name)


def is_wanted(name):
    """Whether the user wants patch ``name`` on (whether or not mxnet is imported yet)."""
    with _lock:
        return name in _wanted


def is_active(name):
    """Whether patch ``name`` is applied now.  No lock: asked on hot paths (a Module's
    attribute), where a patch being applied or removed meanwhile may give either answer."""
    return name in _active


def _check_names(requested, caller):
    for n in requested:
        # Checked before any lookup: a list would raise "unhashable type" from the dict.
        if not isinstance(n, str):
            hint = ""
            if isinstance(n, (list, tuple, set, frozenset)):
                hint = "; to pass several, unpack them: %s(*names)" % caller
            raise TypeError(
                "mxcompat.%s: a patch name is a str (one of %s), not %r of type %s%s"
                % (caller, ", ".join(_registry), n, type(n).__name__, hint)
            )
    unknown = [n for n in requested if n not in _registry]
    if unknown:
        raise ValueError(
            "mxcompat: unknown patch name(s) %s; known patches: %s"
            % (", ".join(map(repr, unknown)), ", ".join(_registry))
        )
    return list(requested) if requested else list(_registry)


def patch(*names: str) -> tuple[str, ...]:
    """Apply the named patches (all if none are named).

    Idempotent and thread-safe.  If mxnet is not imported yet, the patches are applied the
    moment it is.  Returns the names of the patches active now.
    """
    requested = _check_names(names, "patch")
    with _lock:
        _wanted.update(requested)
        if names:
            # Named explicitly: try a patch that failed before again (and warn again).
            for name in requested:
                if _broken.pop(name, None) is not None:
                    forget(("patch-failed", name))
        _ensure_hook()
        _sync()
        return patched()


def unpatch(*names: str) -> tuple[str, ...]:
    """Remove the named patches (all if none are named), restoring MXNet's own objects."""
    requested = _check_names(names, "unpatch")
    with _lock:
        _wanted.difference_update(requested)
        _sync()
        return patched()


def patched() -> tuple[str, ...]:
    """The names of the patches applied to the imported mxnet, in stacking order."""
    with _lock:
        return tuple(_active)


def auto_patch():
    """What ``import mxcompat`` does: every patch, less those the environment turns off."""
    if settings.flag(settings.DISABLE):
        logger.debug("%s is set: mxcompat patches nothing", settings.DISABLE)
        return ()
    skipped = settings.items(settings.DISABLE_PATCHES)
    unknown = [n for n in skipped if n not in _registry]
    if unknown:
        warn_once(
            ("env-unknown",) + tuple(unknown),
            "%s names unknown patch(es) %s; known patches: %s"
            % (settings.DISABLE_PATCHES, ", ".join(map(repr, unknown)), ", ".join(_registry)),
        )
    wanted = [n for n in _registry if n not in skipped]
    return patch(*wanted) if wanted else patched()


# --- applying -------------------------------------------------------------------------------


def _ensure_hook():
    # Registered once per process, whatever the number of imports or reloads of mxcompat.
    global _hook_registered
    if not _hook_registered:
        _hook_registered = True
        # If mxnet is already imported, the hook runs at once.
        hooks.when_imported("mxnet", _on_mxnet_import)


def _on_mxnet_import(module):
    # Runs inside the user's `import mxnet`: nothing of ours may make that import fail.
    try:
        with _lock:
            _sync(module)
    except Exception:
        step_aside(
            "hook-failed", "mxcompat could not patch mxnet ({error}); mxnet is imported unpatched"
        )


def _ready_mxnet():
    """The imported mxnet, or ``None`` if it is absent or still executing its __init__."""
    mx = sys.modules.get("mxnet")
    if mx is None:
        return None
    spec = getattr(mx, "__spec__", None)
    if spec is not None and getattr(spec, "_initializing", False):
        # Another thread is importing it: the post-import hook will patch when it is done.
        return None
    return mx


def _sync(mx=None):
    mx = mx or _ready_mxnet()
    if mx is None:
        return
    version = facts.parse_version(getattr(mx, "__version__", ""))
    if not facts.is_supported(version):
        if _wanted:
            warn_once(
                "unsupported-version",
                "mxcompat supports mxnet %s; the imported mxnet is %r, so nothing is "
                "patched" % (facts.SUPPORTED, getattr(mx, "__version__", None)),
            )
        return
    desired = [
        n
        for n in _registry
        if n in _wanted and n not in _broken and _registry[n].applies_to(version)
    ]
    active = list(_active)
    keep = 0
    while keep < min(len(desired), len(active)) and desired[keep] == active[keep]:
        keep += 1
    # Patches are unwound from the top; one that other code has wrapped over in a way that
    # cannot be unwrapped from beneath pins itself and everything below it.
    for index in range(len(active) - 1, keep - 1, -1):
        blocker = foreign_wrapper(_active[active[index]] + _hot.get(active[index], []))
        if blocker is not None:
            for name in active[keep : index + 1]:
                if name not in desired:
                    _warn_pinned(name, active[index], blocker)
            keep = index + 1
            break
    for name in reversed(active[keep:]):
        _remove(name)
    for name in desired:
        if name in _active:
            continue
        try:
            _apply(name)
        except Exception:
            # One patch that cannot be applied (a target missing in some build, a bug of
            # ours) must not take the others, or the user's `import mxnet`, with it.
            _broken[name] = step_aside(
                ("patch-failed", name),
                "mxcompat's patch {name!r} could not be applied to mxnet {version} ({error}), "
                "so it is off; the other patches are applied",
                name=name,
                version=mx.__version__,
            )


def _apply(name):
    p = _registry[name]
    records = install(name, [t for t in p.targets if not t.hot])
    if p.on_apply is not None:
        try:
            p.on_apply()
        except Exception:
            restore(records)
            raise
    _active[name] = records
    try:
        _rearm(name)
    except Exception:
        del _active[name]
        if p.on_remove is not None:
            p.on_remove()
        restore(records)
        raise
    logger.debug("patched %s", name)


def rearm(*names: str) -> None:
    """Apply or take off the hot targets of the named active patches, as their ``armed()``
    says now (called after the state ``armed`` reads has changed)."""
    with _lock:
        for name in names:
            if name in _active:
                _rearm(name)


def _rearm(name):
    p = _registry[name]
    if not any(t.hot for t in p.targets):
        return
    want = p.armed is None or bool(p.armed())
    if want and name not in _hot:
        _hot[name] = install(name, [t for t in p.targets if t.hot])
    elif not want and name in _hot:
        if foreign_wrapper(_hot[name]) is not None:
            return  # other code wrapped over it since: it stays (it only checks, then calls)
        restore(_hot.pop(name))


def is_armed(name):
    """Whether patch ``name``'s hot targets are applied now."""
    return name in _hot


def _warn_pinned(name, holder, blocker):
    warn_once(
        ("unpatch-pinned", name),
        "mxcompat cannot remove its patch %r: other code has wrapped over what patch %r "
        "wraps (with %r) since mxcompat patched it, and removing mxcompat's wrapper "
        "from beneath would drop that wrapper too, so patch %r stays applied"
        % (name, holder, blocker, name),
    )


def _remove(name):
    hot = _hot.pop(name, [])
    records = _active.pop(name)
    p = _registry[name]
    restore(hot)
    if p.on_remove is not None:
        p.on_remove()
    restore(records)
    logger.debug("unpatched %s", name)
