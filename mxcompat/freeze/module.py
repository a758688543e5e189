"""The freeze registry on MXNet's Module path: at bind, frozen names join the bind's fixed
names (no gradient buffer); at update, ``model._update_params`` and
``_update_params_on_kvstore`` see a frozen entry's gradients as ``None`` (MXNet's own skip).
See the package docstring for the rules."""

import functools
import inspect
import threading
import weakref

from .._core.log import warn
from .._core.util import bind_arguments
from . import registry
from .onednn_fc_bias import null_would_stop_bias, registry_bind

# --- update time: MXNet's own "fixed parameter" skip ----------------------------------------

_local = threading.local()  # .depth: nesting of container updates


def _masked_grads(names, grads):
    """``grads`` with the frozen entries' gradients replaced by ``None``, or ``None`` if
    nothing is to be skipped."""
    if names is None or grads is None:
        return None
    found = registry.matches(tuple(names))
    if found is None:
        return None
    out = None
    count = len(grads)
    # Only the frozen positions are visited: with a frozen backbone bound without gradients
    # they all hold None already, and nothing is copied.
    for i in found[2]:
        if i < count:
            grad_list = grads[i]
            if grad_list is not None and len(grad_list) and grad_list[0] is not None:
                if out is None:
                    out = list(grads)
                # Same length: MXNet tests grad_list[0] and zips it with the weights.
                out[i] = [None] * len(grad_list)
    return out


@functools.lru_cache(maxsize=None)
def _positions(wrapped):
    """Where ``grad_arrays`` and ``param_names`` come in a call of ``wrapped`` (the same
    signatures in every release, read once rather than bound per call)."""
    params = list(inspect.signature(wrapped).parameters)
    return params.index("grad_arrays"), params.index("param_names")


def wrap_update_fn(wrapped, instance, args, kwargs):
    # _update_params(param_arrays, grad_arrays, updater, num_device, kvstore, param_names),
    # _update_params_on_kvstore(_nccl)(param_arrays, grad_arrays, kvstore, param_names).
    if not registry.state.patterns:
        return wrapped(*args, **kwargs)
    grads_at, names_at = _positions(wrapped)
    grads = args[grads_at] if len(args) > grads_at else kwargs.get("grad_arrays")
    names = args[names_at] if len(args) > names_at else kwargs.get("param_names")
    state = getattr(_local, "state", None)
    clean = state.clean if state is not None else None
    if (
        clean is not None
        and clean[0] == registry.state.version
        and clean[1] is grads
        and clean[2] is names
    ):
        # This module's last update found nothing to mask for the same lists and registry
        # (identity, never ==: these are lists of NDArrays).
        return wrapped(*args, **kwargs)
    masked = _masked_grads(names, grads)
    if masked is None:
        if state is not None:
            state.clean = (registry.state.version, grads, names)
        return wrapped(*args, **kwargs)
    if len(args) > grads_at:
        args = args[:grads_at] + (masked,) + args[grads_at + 1 :]
    else:
        kwargs = dict(kwargs, grad_arrays=masked)
    return wrapped(*args, **kwargs)


# --- Module: bind and update ------------------------------------------------------------------


class _BindState:
    __slots__ = ("frozen_at_bind", "warned", "checked", "clean")

    def __init__(self, frozen_at_bind):
        self.frozen_at_bind = frozen_at_bind  # registry names bound with grad_req 'null'
        self.warned = set()
        self.checked = None  # registry version last checked for thaws
        # (registry version, grad list, name list) of the last update that had nothing to
        # mask (every frozen parameter bound without a gradient): the next one with the same
        # objects skips the scan.  The lists are the executor group's, which this state
        # does not outlive (it dies with its module).
        self.clean = None


_bind_states = weakref.WeakKeyDictionary()
_bind_lock = threading.Lock()


def wrap_module_bind(wrapped, instance, args, kwargs):
    bound = bind_arguments(wrapped, args, kwargs)
    if instance.binded and not bound.arguments.get("force_rebind", False):
        return wrapped(*args, **kwargs)  # MXNet ignores the call (and says so)
    user_fixed = list(instance._fixed_param_names or [])
    frozen_now = []
    if bound.arguments.get("for_training", True):
        found = registry.matches(tuple(instance._param_names))
        if found is not None:
            frozen_now = [
                n for n, f in zip(instance._param_names, found[0]) if f and n not in user_fixed
            ]
    with _bind_lock:
        _bind_states.pop(instance, None)
    if not frozen_now:
        return wrapped(*args, **kwargs)
    # Frozen names whose 'null' would stop a bias gradient stay off 'null' (the update skip
    # holds them).  The user's own fixed names are left to MXNet, or to the onednn_fc_bias
    # patch stacked below, which is told which names are the registry's.
    keep = null_would_stop_bias(
        instance._symbol,
        user_fixed + frozen_now,
        instance._context,
        bound.arguments.get("grad_req", "write"),
    )
    added = [n for n in frozen_now if n not in keep]
    instance._fixed_param_names = user_fixed + added
    try:
        with registry_bind(added):
            result = wrapped(*args, **kwargs)
    finally:
        # The registry stays the source of truth: a later bind reads it again.
        instance._fixed_param_names = user_fixed
    # Frozen at bind means bound without a gradient: a grad_req list or dict may have given
    # a frozen parameter one anyway, and then unfreezing it needs no rebind.
    group = instance._exec_group
    no_grad = set()
    if group is not None and group.grad_arrays is not None:
        no_grad = set(n for n, g in zip(group.param_names, group.grad_arrays) if g[0] is None)
    state = _BindState(set(n for n in frozen_now if n in no_grad))
    with _bind_lock:
        shared_module = bound.arguments.get("shared_module")
        shared = _bind_states.get(shared_module) if shared_module is not None else None
        if shared is not None:
            # A BucketingModule's buckets share their parameters: one warning for all.
            state.warned = shared.warned
        _bind_states[instance] = state
    return result


def _warn_thawed(state):
    # Names thaw only when the registry changes: check once per registry version, not at
    # every update (is_frozen over every frozen name is O(names x patterns)).
    version = registry.state.version
    if state.checked == version:
        return
    state.checked = version
    thawed = sorted(
        n for n in state.frozen_at_bind if n not in state.warned and not registry.is_frozen(n)
    )
    if not thawed:
        return
    state.warned.update(thawed)
    warn(
        "parameter(s) %s were frozen when this Module was bound, so MXNet allocated no "
        "gradient for them and they stay fixed although they are unfrozen now. To train them, "
        "rebind (weights and optimizer states are kept): mod.get_params(); "
        "mod.bind(data_shapes=mod.data_shapes, label_shapes=mod.label_shapes, "
        "force_rebind=True)" % ", ".join(map(repr, thawed))
    )


def module_param_names(module):
    if hasattr(module, "_modules") and isinstance(module._modules, list):  # Sequential
        names = []
        for sub in module._modules:
            names.extend(n for n in module_param_names(sub) if n not in names)
        return names
    buckets = getattr(module, "_buckets", None)
    if isinstance(buckets, dict):  # Bucketing
        names = []
        for sub in buckets.values():
            names.extend(n for n in module_param_names(sub) if n not in names)
        return names
    return list(getattr(module, "_param_names", None) or [])


_checked = weakref.WeakKeyDictionary()  # Module -> registry version its patterns were checked


def _check_module_patterns(module, once_per_version=False):
    if getattr(_local, "depth", 0) or not registry.state.patterns:
        return
    version = registry.state.version
    if once_per_version and _checked.get(module) == version:
        return
    names = tuple(module_param_names(module))
    found = registry.matches(names)
    if found is not None and found[1]:
        registry.warn_unmatched(found[1], names, module, type(module).__name__)
    if once_per_version:
        _checked[module] = version


def wrap_module_update(wrapped, instance, args, kwargs):
    state = _bind_states.get(instance)
    if not registry.state.patterns and state is None:
        return wrapped(*args, **kwargs)
    # A Module's parameter names never change: its patterns are checked once per registry
    # state (the warning is once anyway), not at every update.
    _check_module_patterns(instance, once_per_version=True)
    if state is not None:
        _warn_thawed(state)
    # Nested (in a container's update): the container checked all its parameters already.
    _local.depth = getattr(_local, "depth", 0) + 1
    outer, _local.state = getattr(_local, "state", None), state
    try:
        return wrapped(*args, **kwargs)
    finally:
        _local.depth -= 1
        _local.state = outer


def warm(module):
    """Do, untimed, the work a Module's first update after a registry change does once (the
    benchmarks change the registry between the sides they interleave; a training loop sets
    it once)."""
    _check_module_patterns(module, once_per_version=True)
    state = _bind_states.get(module)
    group = getattr(module, "_exec_group", None)
    if state is None or group is None:
        return
    _warn_thawed(state)
    grads, names = group.grad_arrays, group.param_names
    if _masked_grads(names, grads) is None:
        state.clean = (registry.state.version, grads, names)


def wrap_container_update(wrapped, instance, args, kwargs):
    if not registry.state.patterns:
        return wrapped(*args, **kwargs)
    _check_module_patterns(instance)
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        return wrapped(*args, **kwargs)
    finally:
        _local.depth -= 1
