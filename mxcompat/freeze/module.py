"""The freeze registry at a Module's update: ``model._update_params`` and
``_update_params_on_kvstore`` see a frozen entry's gradients as ``None`` (MXNet's own skip),
which holds what a bind could not leave without a gradient (``binding``).  See the package
docstring for the rules."""

import functools
import inspect
import threading
import weakref

from . import registry
from .binding import _bind_states, settle

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


# --- Module: update ---------------------------------------------------------------------------


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
    if not registry.state.patterns:
        return wrapped(*args, **kwargs)
    # A Module's parameter names never change: its patterns are checked once per registry
    # state (the warning is once anyway), not at every update.
    _check_module_patterns(instance, once_per_version=True)
    # Nested (in a container's update): the container checked all its parameters already.
    _local.depth = getattr(_local, "depth", 0) + 1
    outer, _local.state = getattr(_local, "state", None), _bind_states.get(instance)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _local.depth -= 1
        _local.state = outer


def warm(module):
    """Do, untimed, the work a Module's first step after a registry change does once (the
    benchmarks change the registry between the sides they interleave; a training loop sets
    it once): the rebind if the registry's change needs one, the pattern check, the "nothing
    to mask" scan."""
    settle(module)
    _check_module_patterns(module, once_per_version=True)
    state = _bind_states.get(module)
    group = getattr(module, "_exec_group", None)
    if state is None or group is None:
        return
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
