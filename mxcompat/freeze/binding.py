"""The freeze registry at a Module's bind: frozen names join the bind's fixed names (no
gradient buffer, no backward for them, as with ``fixed_param_names``), and a Module bound for
training is bound again at its next ``forward`` once the registry fixes another set of its
parameters (``settle``).  See the package docstring for the rules."""

import threading
import weakref

from .._core.log import warn_once_for
from .._core.registry import rearm
from .._core.util import bind_arguments
from . import registry
from .onednn_fc_bias import null_would_stop_bias, registry_bind

# Off: a Module frozen after bind keeps its gradients and the update skip alone holds the
# frozen parameters (the tests and the benchmark compare both ways; not a user setting).
REBIND = True


class _Inputs:
    """What a bind of a module reads to choose its fixed names, taken at its bind, so that
    ``_look`` compares every bound module without touching one (see ``_states``)."""

    __slots__ = ("names", "fixed", "keeps_all", "symbol", "contexts")

    def __init__(self, module):
        self.names = tuple(module._param_names)
        # The user's own list itself: changed in place, it is read as changed.
        self.fixed = module.__dict__.get("_fixed_param_names")
        self.keeps_all = _keeps_every_gradient(module)
        self.symbol = module._symbol
        self.contexts = module._context


class _BindState:
    # Nothing here may own an executor (the Monitors, which do, are in _monitors): _look
    # visits the states of other threads' modules and may drop a state's last reference.
    # Its NDArrays and Symbol may be freed by any thread, an executor not (_states).
    __slots__ = (
        "inputs",
        "added",
        "grad_req",
        "shared",
        "dependents",
        "pending",
        "clean",
        "known",
        "__weakref__",
    )

    def __init__(self, inputs, added, grad_req, shared):
        self.inputs = inputs
        self.added = added  # the registry's names this bind gave grad_req 'null'
        self.grad_req = grad_req
        self.shared = shared  # weak reference to the bind's shared_module, or None
        self.dependents = []  # weak references to modules bound sharing this one's arrays
        self.pending = False  # the registry now fixes another set: rebind at the next forward
        # (registry version, grad list, name list) of the last update that had nothing to
        # mask (every frozen parameter bound without a gradient): the next one with the same
        # objects skips the scan.  The lists are the executor group's, which this state
        # outlives by a visit of _look at most (it dies with its module or its next bind).
        self.clean = None
        # (frozen names, user's fixed names) -> what a bind would add: the FullyConnected
        # check reads the whole graph, once per distinct frozen set rather than per change.
        self.known = {}


_bind_states: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # every training bind
# The same states, to visit them all.  Never through _bind_states: iterating a
# WeakKeyDictionary holds each module for a moment, and a module whose own thread let it go
# meanwhile would die in the visiting thread, maybe after its own thread ended, which MXNet
# up to 1.5 does not survive (facts.EXECUTOR_OUTLIVES_ITS_THREAD).
_states: weakref.WeakSet = weakref.WeakSet()
# Module -> the Monitors installed on its training binding's executors (they hold them).
_monitors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_bind_lock = threading.RLock()  # a rebind binds (and so takes it) again


class _Seen:
    """The registry version every bound Module was last compared at, and how many were
    found to need a rebind then: the forward's fast path reads these two only."""

    version = 0
    pending = 0


def _keeps_every_gradient(module):
    # SVRGModule's update and update_full_grads read every parameter's gradient, of the
    # module and of its auxiliary module: one bound 'null' is an error there, natively too
    # (facts.SVRG_READS_EVERY_GRADIENT), so the update skip alone holds what is frozen.
    if any(c.__name__ == "SVRGModule" for c in type(module).__mro__):
        return True
    return module in _svrg_aux


_svrg_aux: weakref.WeakSet = weakref.WeakSet()


def _registry_fixed(inputs, grad_req, known=None):
    """The registry's names a bind with ``inputs`` (a module's ``_Inputs``) now gives
    ``grad_req`` 'null' (MXNet's fixed names), and the user's own fixed names:
    ``(added, user_fixed)``."""
    user_fixed = list(inputs.fixed or [])
    found = registry.matches(inputs.names)
    if found is None or inputs.keeps_all:
        return frozenset(), user_fixed
    frozen_now = [n for n, f in zip(inputs.names, found[0]) if f and n not in user_fixed]
    if not frozen_now:
        return frozenset(), user_fixed
    key = (tuple(frozen_now), tuple(user_fixed))
    added = known.get(key) if known is not None else None
    if added is None:
        # Frozen names whose 'null' would stop a bias gradient stay off 'null' (the update
        # skip holds them).
        keep = null_would_stop_bias(
            inputs.symbol, user_fixed + frozen_now, inputs.contexts, grad_req
        )
        added = frozenset(n for n in frozen_now if n not in keep)
        if known is not None:
            if len(known) >= 8:
                known.clear()
            known[key] = added
    return added, user_fixed


def _layout_changes(state, added):
    """Whether binding with ``added`` instead of ``state.added`` gives a parameter another
    grad_req, by MXNet's rules: a string gives every fixed name 'null' (all 'null' already
    if it is 'null'), a dict's entries win over fixed names, a list ignores them."""
    changed = added ^ state.added
    grad_req = state.grad_req
    if not changed or isinstance(grad_req, (list, tuple)):
        return False
    if isinstance(grad_req, dict):
        return any(n not in grad_req for n in changed)
    return grad_req != "null"


def wrap_module_bind(wrapped, instance, args, kwargs):
    bound = bind_arguments(wrapped, args, kwargs)
    if instance.binded and not bound.arguments.get("force_rebind", False):
        return wrapped(*args, **kwargs)  # MXNet ignores the call (and says so)
    grad_req = bound.arguments.get("grad_req", "write")
    shared_module = bound.arguments.get("shared_module")
    if shared_module is not None:
        # A module shares the arrays (and the gradient layout) of the one it is bound with:
        # that one catches up with the registry first.
        settle(shared_module)
    with _bind_lock:
        _bind_states.pop(instance, None)
        _monitors.pop(instance, None)
    if any(c.__name__ == "SVRGModule" for c in type(instance).__mro__):
        aux = getattr(instance, "_mod_aux", None)
        if aux is not None:
            _svrg_aux.add(aux)
    if not bound.arguments.get("for_training", True):
        return wrapped(*args, **kwargs)
    inputs = _Inputs(instance)
    added, user_fixed = _registry_fixed(inputs, grad_req)
    if not added:
        result = wrapped(*args, **kwargs)
    else:
        instance._fixed_param_names = user_fixed + [n for n in instance._param_names if n in added]
        try:
            # The user's own fixed names are left to MXNet, or to the onednn_fc_bias patch
            # stacked below, which is told which names are the registry's.
            with registry_bind(added):
                result = wrapped(*args, **kwargs)
        finally:
            # The registry stays the source of truth: a later bind reads it again.
            instance._fixed_param_names = user_fixed
    # The list the module holds from now on (the bind above may have replaced it).
    inputs.fixed = instance.__dict__.get("_fixed_param_names")
    shared = weakref.ref(shared_module) if shared_module is not None else None
    state = _BindState(inputs, added, grad_req, shared)
    with _bind_lock:
        _bind_states[instance] = state
        _states.add(state)
        if shared_module is not None:
            owner = _bind_states.get(shared_module)
            if owner is not None:
                owner.dependents.append(weakref.ref(instance))
    return result


def wrap_install_monitor(wrapped, instance, args, kwargs):
    result = wrapped(*args, **kwargs)
    with _bind_lock:
        if _bind_states.get(instance) is not None:
            mon = bind_arguments(wrapped, args, kwargs).arguments["mon"]
            _monitors.setdefault(instance, []).append(mon)
    return result


def wrap_module_forward(wrapped, instance, args, kwargs):
    # Per step: two reads, unless the registry changed or a Module waits for its rebind.
    if _Seen.pending or _Seen.version != registry.state.version:
        settle(instance)
    return wrapped(*args, **kwargs)


def _look():
    """Compare every bound Module with the live registry (once per registry version)."""
    version = registry.state.version
    if _Seen.version == version:
        return
    pending = 0
    for state in list(_states):
        added = _registry_fixed(state.inputs, state.grad_req, state.known)[0]
        if not _layout_changes(state, added):
            state.added = added  # the same executors: nothing to rebind for
            state.pending = False
        else:
            state.pending = REBIND
        pending += state.pending
    _Seen.pending = pending
    _Seen.version = version


def look():
    """Compare every bound Module with the live registry now, not at the next forward (the
    benchmarks do it untimed)."""
    with _bind_lock:
        _look()


def unsettled():
    """Whether a bound Module may wait for its rebind (``hot_path``: the forward's check)."""
    return bool(_Seen.pending or _Seen.version != registry.state.version)


def settle(module):
    """Rebind ``module`` (with every module sharing its arrays) if the registry now fixes
    another set of its parameters than its executors were bound with."""
    with _bind_lock:
        was = unsettled()
        _look()
        state = _bind_states.get(module)
        if state is not None and state.pending:
            _rebind_shared(module)
            # Not rebound (its root is not a training bind, or was unbound): it keeps its
            # executors, and the update skip holds what is frozen.
            state.pending = False
        if _Seen.pending:
            _Seen.pending = sum(s.pending for s in list(_states))
        done = was and not unsettled()
    if done:
        # The last Module waiting for its rebind had it: with nothing frozen, the step's
        # path goes back to MXNet's own functions.
        rearm("freeze")


def _rebind_shared(module):
    root = module
    while True:
        state = _bind_states.get(root)
        shared = state.shared() if state is not None and state.shared is not None else None
        if shared is None:
            break
        root = shared
    if _hand_set_monitor(root):
        return
    import mxnet as mx

    # BatchNorm's backward writes its running statistics without the engine ordering
    # reads after it (facts.BATCHNORM_STATS_WRITE_UNORDERED): the copies below would read
    # them before the last step's write.
    mx.nd.waitall()
    _rebind(root, None)
    mx.nd.waitall()


def _hand_set_monitor(root):
    """A monitor callback set on an executor by hand (not through install_monitor) cannot be
    carried to new executors: such a module keeps its executors (one warning) and the update
    skip holds what is frozen."""
    modules = [root]
    found = []
    while modules:
        module = modules.pop()
        state = _bind_states.get(module)
        if state is None or not module.binded:
            continue
        known = set(id(e) for mon in _monitors.get(module, ()) for e in getattr(mon, "exes", ()))
        if any(
            getattr(e, "_monitor_callback", None) is not None and id(e) not in known
            for e in module._exec_group.execs
        ):
            found.append(module)
        modules.extend(m for m in (ref() for ref in state.dependents) if m is not None)
    if not found:
        return False
    for module in found:
        _bind_states[module].pending = False
    warn_once_for(
        root,
        ("freeze-no-rebind",),
        "mxcompat.freeze: this Module's executors have a monitor callback set by hand "
        "(Executor.set_monitor_callback), which a new binding would not have, so mxcompat "
        "does not rebind it after the registry changed: its frozen parameters keep their "
        "gradients (the update skips them), and parameters it was bound without a gradient "
        "for stay fixed until you rebind it (mod.bind(..., force_rebind=True))",
    )
    return True


def _rebind(module, shared_module):
    """Bind ``module`` again as it was bound, with the registry's fixed names of now, and
    give the new executors every value the old ones held."""
    state = _bind_states.get(module)
    if state is None or not module.binded or not module.params_initialized:
        return
    old = module._exec_group
    monitors = _monitors.get(module, [])
    module.bind(
        module._data_shapes,
        module._label_shapes,
        for_training=module.for_training,
        inputs_need_grad=module.inputs_need_grad,
        force_rebind=True,
        shared_module=shared_module,
        grad_req=state.grad_req,
    )
    new = module._exec_group
    _copy_values(old, new)
    if _bind_states.get(module) is not None and monitors:
        for mon in monitors:
            # Monitor.toc reads every executor it was installed on: the old ones go.
            mon.exes[:] = [e for e in mon.exes if all(e is not o for o in old.execs)]
            new.install_monitor(mon)
        _monitors[module] = monitors
    for ref in state.dependents:
        dependent = ref()
        if dependent is not None and _bind_states.get(dependent) is not None:
            _rebind(dependent, module)


def _copy_values(old, new):
    """Per device, no averaging: parameters, auxiliary states, the module's states
    (``set_states``) and gradients accumulated with grad_req 'add'."""

    def copy(src, dst):
        if src is not None and dst is not None and src.handle.value != dst.handle.value:
            src.copyto(dst)

    for old_exec, new_exec in zip(old.execs, new.execs):
        old_args, new_args = old_exec.arg_dict, new_exec.arg_dict
        for name in list(new.param_names) + list(getattr(new, "state_names", None) or ()):
            if name in old_args:
                copy(old_args[name], new_args[name])
        old_aux = old_exec.aux_dict
        for name, array in new_exec.aux_dict.items():
            copy(old_aux.get(name), array)
        old_grads, new_grads = old_exec.grad_dict, new_exec.grad_dict
        for name, req in new.grad_req.items():
            if req == "add" and old.grad_req.get(name) == "add":
                copy(old_grads.get(name), new_grads.get(name))
