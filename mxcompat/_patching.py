"""The patch lifecycle: a registry of named patches, applied to mxnet when it is imported.

Modelled on wrapt's post-import hooks, ddtrace's patch()/unpatch() and OpenTelemetry's
instrumentors.  Each patch is a list of targets (a module, a dotted attribute, a wrapt
wrapper).  What the user wants active (``_wanted``) is kept apart from what is applied
(``_active``, in registry order); ``_sync`` makes the second match the first.  Because two
patches may wrap the same function (``Module.bind``), patches are always stacked in registry
order, and removing one unwinds the ones stacked above it and re-applies them: every
``unpatch`` leaves the exact original objects behind (``Module.bind is original_bind``).
"""
import os
import sys
import threading
from collections import OrderedDict

import wrapt

from . import _compat
from ._log import logger, warn_once

ENV_DISABLE = "MXCOMPAT_DISABLE"
ENV_DISABLE_PATCHES = "MXCOMPAT_DISABLE_PATCHES"

_FALSY = ("", "0", "false", "no", "off")

# RLock: a patch's on_apply may call back into the registry.
_lock = threading.RLock()
_registry = OrderedDict()   # name -> Patch, in the order patches stack
_wanted = set()             # names the user wants active
_active = OrderedDict()     # name -> [applied target records], in stacking order
_hook_registered = [False]


class Target(object):
    """One attribute a patch changes.

    ``wrapper`` (a wrapt wrapper ``(wrapped, instance, args, kwargs)``) wraps an existing
    function; ``new`` adds an attribute MXNet does not have (e.g. ``Module.to_gluon``).
    ``optional`` targets are skipped when the release lacks the attribute.
    """

    def __init__(self, module, path, wrapper=None, new=None, optional=False):
        assert (wrapper is None) != (new is None)
        self.module = module
        self.path = path
        self.wrapper = wrapper
        self.new = new
        self.optional = optional


class Patch(object):
    """A named, independently (un)patchable fix.

    ``since``: the first MXNet release the patch applies to (``None``: every supported one).
    ``on_apply``/``on_remove``: extra work beyond the targets (e.g. installing a hook).
    """

    def __init__(self, name, doc, targets=(), since=None, on_apply=None, on_remove=None):
        self.name = name
        self.doc = doc
        self.targets = list(targets)
        self.since = since
        self.on_apply = on_apply
        self.on_remove = on_remove

    def applies_to(self, version):
        return self.since is None or _compat.since(self.since, version)


def register(patch):
    """Add a patch to the registry (import-time; the registry order is the stacking order)."""
    with _lock:
        _registry[patch.name] = patch
    return patch


def names():
    """Every registered patch name, in stacking order."""
    return tuple(_registry)


def _check_names(requested):
    unknown = [n for n in requested if n not in _registry]
    if unknown:
        raise ValueError("mxcompat: unknown patch name(s) %s; known patches: %s"
                         % (", ".join(map(repr, unknown)), ", ".join(_registry)))
    return list(requested) if requested else list(_registry)


def patch(*names):
    """Apply the named patches (all if none are named).

    Idempotent and thread-safe.  If mxnet is not imported yet, the patches are applied the
    moment it is.  Returns the names of the patches active now.
    """
    requested = _check_names(names)
    with _lock:
        _wanted.update(requested)
        _ensure_hook()
        _sync()
        return patched()


def unpatch(*names):
    """Remove the named patches (all if none are named), restoring MXNet's own objects."""
    requested = _check_names(names)
    with _lock:
        _wanted.difference_update(requested)
        _sync()
        return patched()


def patched():
    """The names of the patches applied to the imported mxnet, in stacking order."""
    with _lock:
        return tuple(_active)


def _env_flag(name):
    return os.environ.get(name, "").strip().lower() not in _FALSY


def auto_patch():
    """What ``import mxcompat`` does: every patch, less those the environment turns off."""
    if _env_flag(ENV_DISABLE):
        logger.debug("%s is set: mxcompat patches nothing", ENV_DISABLE)
        return ()
    skipped = [n.strip() for n in os.environ.get(ENV_DISABLE_PATCHES, "").split(",") if n.strip()]
    unknown = [n for n in skipped if n not in _registry]
    if unknown:
        warn_once(("env-unknown",) + tuple(unknown),
                  "%s names unknown patch(es) %s; known patches: %s"
                  % (ENV_DISABLE_PATCHES, ", ".join(map(repr, unknown)), ", ".join(_registry)))
    wanted = [n for n in _registry if n not in skipped]
    return patch(*wanted) if wanted else patched()


# --- applying -------------------------------------------------------------------------------

def _ensure_hook():
    # Registered once per process, whatever the number of imports or reloads of mxcompat.
    if not _hook_registered[0]:
        _hook_registered[0] = True
        # If mxnet is already imported, wrapt calls the hook at once.
        wrapt.register_post_import_hook(_on_mxnet_import, "mxnet")


def _on_mxnet_import(module):
    with _lock:
        _sync(module)


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
    version = _compat.parse_version(getattr(mx, "__version__", ""))
    if not _compat.is_supported(version):
        if _wanted:
            warn_once("unsupported-version",
                      "mxcompat supports mxnet %s; the imported mxnet is %r, so nothing is "
                      "patched" % (_compat.SUPPORTED, getattr(mx, "__version__", None)))
        return
    desired = [n for n in _registry if n in _wanted and _registry[n].applies_to(version)]
    active = list(_active)
    keep = 0
    while keep < min(len(desired), len(active)) and desired[keep] == active[keep]:
        keep += 1
    for name in reversed(active[keep:]):
        _remove(name)
    for name in desired[keep:]:
        _apply(name)


def _resolve(target):
    # Only modules already in sys.modules are used: mxnet/__init__ imports all we patch, and
    # importing here (under our lock) could deadlock against another thread's import.
    module = sys.modules.get(target.module)
    if module is None:
        if target.optional:
            return None
        raise RuntimeError("mxcompat: %s is not imported" % target.module)
    parts = target.path.split(".")
    parent = module
    for part in parts[:-1]:
        parent = getattr(parent, part)
    return parent, parts[-1]


def _apply(name):
    p = _registry[name]
    records = []
    try:
        for target in p.targets:
            resolved = _resolve(target)
            if resolved is None:
                continue
            parent, attr = resolved
            # __dict__, not getattr: restore the raw object (a staticmethod stays one) and
            # know whether the attribute was the class's own or inherited.
            owned = attr in vars(parent)
            if target.new is None and not hasattr(parent, attr):
                if target.optional:
                    continue
                raise AttributeError("mxcompat: %s.%s not found" % (target.module, target.path))
            original = vars(parent)[attr] if owned else None
            if target.wrapper is not None and not owned and _wrapped_by(
                    _raw_attribute(parent, attr), name):
                # Inherited from a class this patch already wrapped (e.g. a metric's reset
                # from EvalMetric on releases where the subclass has none): wrapping again
                # would run the wrapper twice.
                continue
            if target.wrapper is not None:
                wrapper = wrapt.wrap_function_wrapper(parent, attr, target.wrapper)
                wrapper._self_mxcompat_patch = name
            else:
                setattr(parent, attr, target.new)
            records.append((parent, attr, owned, original))
    except Exception:
        _restore(records)
        raise
    if p.on_apply is not None:
        try:
            p.on_apply()
        except Exception:
            _restore(records)
            raise
    _active[name] = records
    logger.debug("patched %s", name)


def _raw_attribute(parent, attr):
    """The attribute as stored, looked up along the MRO for a class (no descriptor binding)."""
    if isinstance(parent, type):
        for klass in parent.__mro__:
            if attr in vars(klass):
                return vars(klass)[attr]
        return None
    return vars(parent).get(attr)


def _wrapped_by(obj, name):
    """True if ``obj`` is, or stacks on, a wrapper installed by the patch ``name``."""
    while hasattr(obj, "_self_mxcompat_patch"):
        if obj._self_mxcompat_patch == name:
            return True
        obj = obj.__wrapped__
    return False


def _restore(records):
    for parent, attr, owned, original in reversed(records):
        if owned:
            setattr(parent, attr, original)
        else:
            delattr(parent, attr)


def _remove(name):
    records = _active.pop(name)
    p = _registry[name]
    if p.on_remove is not None:
        p.on_remove()
    _restore(records)
    logger.debug("unpatched %s", name)
