"""The freeze registry on Gluon's Trainer: frozen parameters are seen as ``grad_req ==
'null'`` by its update loops, at their own index.  Those a ``gradients=False`` pattern
matches also skip their backward: after each step they are marked ``'null'`` for autograd
(``mark_variables``), with their gradient buffers kept and zeroed, so their ``grad_req``,
``grad()`` and ``zero_grad()`` read as before while the backward computes nothing for them
(the cost of ``grad_req='null'``).  Not the ``grad_req`` setter: it detaches the data and
drops the buffers, which user code would see.

On the oneDNN builds (``onednn_fc_bias.affected_build``), a 'null' FullyConnected weight
stops its bias's gradient too, imperative or hybridized.  The Trainer sees parameters, not
the graph, so the rule is by shape: a 2-D parameter (an FC weight is ``(units, inputs)``)
keeps its backward there while a 1-D parameter of ``units`` elements still gets a gradient
(a possible bias).  Sound for every FC, whatever its names; an Embedding may keep a
backward it did not need."""

import weakref

from .._core.registry import rearm
from . import registry

# --- Gluon Trainer ----------------------------------------------------------------------------


class _FrozenView:
    """A Parameter as the Trainer's update loops see it while frozen: ``grad_req`` reads
    'null' (their skip), everything else is the parameter's.  Its position in
    ``Trainer._params`` is kept, so the optimizer and kvstore indices do not move."""

    grad_req = "null"

    def __init__(self, param):
        object.__setattr__(self, "_param", param)

    def __getattr__(self, attr):
        return getattr(self._param, attr)

    def __setattr__(self, attr, value):
        setattr(self._param, attr, value)


# Parameter -> (its data list, its gradient list) as marked 'null' here.  The lists' identity
# says whether the mark still holds: Gluon re-marks with new lists (the grad_req setter,
# initialize, reset_ctx, cast).
_skipped = weakref.WeakKeyDictionary()
# Parameters given their gradient back since their last step: until a backward computes it,
# the step treats them as frozen (their buffer holds no gradient of this step).
_thawed = weakref.WeakKeyDictionary()
# Parameter -> (data list, gradient list): left with their backward by the oneDNN rule, until
# the registry changes (which may freeze the bias) or Gluon re-marks them.
_held = weakref.WeakKeyDictionary()


def _marked(param, table):
    entry = table.get(param)
    return entry is not None and entry[0] is param._data and entry[1] is param._grad


def _settle(params, skip):
    """Mark the parameters ``skip`` selects 'null' for autograd, those not marked yet."""
    pending = [
        p
        for p, s in zip(params, skip)
        if s
        and p._data is not None
        and p._grad is not None
        and not _marked(p, _skipped)
        and not _marked(p, _held)
    ]
    if not pending:
        return
    from .onednn_fc_bias import affected_build, runs_onednn_on

    lengths = ()
    if affected_build():
        lengths = set(
            p.shape[0]
            for p, s in zip(params, skip)
            if not s and p.grad_req != "null" and p.shape is not None and len(p.shape) == 1
        )
    for param in pending:
        shape = param.shape
        if (
            shape is not None
            and len(shape) == 2
            and shape[0] in lengths
            and runs_onednn_on(param.list_ctx())
        ):
            _held[param] = (param._data, param._grad)
        else:
            _skip_backward(param)


def _skip_backward(param):
    data, grad = param._data, param._grad
    from mxnet import autograd

    autograd.mark_variables(data, grad, "null")
    # Zeros rather than the last gradient computed: it would be read as this step's.
    param.zero_grad()
    for array in data:
        array._fresh_grad = False
    _skipped[param] = (data, grad)
    _thawed.pop(param, None)


def _give_back(param):
    data, grad = _skipped.pop(param)
    if param._data is data and param._grad is grad:
        from mxnet import autograd

        autograd.mark_variables(data, grad, param.grad_req)
        _thawed[param] = True


def on_registry_change():
    """Called by ``hot_path`` after every registry change, before it re-arms (``freeze_armed``
    reads the gradients given back here): at once, not at the next step, as the next
    backward must compute what is thawed."""
    _held.clear()  # re-decided at the next step: the change may have frozen their bias
    if not _skipped:
        return
    params = list(_skipped.keys())
    skip = registry.skips_gradient(tuple(p.name for p in params)) or (False,) * len(params)
    for param, keep in zip(params, skip):
        if not keep:
            _give_back(param)


def _stale(param):
    return param in _thawed and not all(array._fresh_grad for array in param._data or ())


# Trainer -> (version, id of its parameter list, its length, found).  Never the list itself: a
# Parameter refers to its Trainer (Parameter._trainer), so a value holding the parameters
# would keep its own weak key alive, and with it the Trainer and its (dist) kvstore, until
# interpreter exit (measured: a ps-lite worker then aborts at exit and its cluster hangs).
_trainer_cache = weakref.WeakKeyDictionary()


def trainer_matches(trainer, params):
    """``_matches`` of the trainer's parameter names plus the names, computed once per
    registry state and parameter list rather than at every step."""
    version = registry.state.version
    cached = _trainer_cache.get(trainer)
    if (
        cached is not None
        and cached[0] == version
        and cached[1] == id(params)
        and cached[2] == len(params)
    ):
        return cached[3]
    names = tuple(p.name for p in params)
    found = registry.matches(names)
    if found is not None:
        found = found + (names, registry.skips_gradient(names))
    _trainer_cache[trainer] = (version, id(params), len(params), found)
    return found


def wrap_trainer(check):
    """``check``: the wrapper of ``_update``, the step's last call: it warns about patterns
    matching nothing and marks the parameters whose backward is skipped."""

    def wrapper(wrapped, instance, args, kwargs):
        if not registry.state.patterns and not _thawed:
            return wrapped(*args, **kwargs)
        params = instance._params
        found = trainer_matches(instance, params)
        if found is None:
            mask, skip = (False,) * len(params), None
        else:
            mask, unmatched, _, names, skip = found
            if check and unmatched:
                registry.warn_unmatched(unmatched, names, instance, "gluon.Trainer")
        if _thawed:
            mask = [m or _stale(p) for p, m in zip(params, mask)]
        if not any(mask):
            result = wrapped(*args, **kwargs)
        else:
            instance._params = [_FrozenView(p) if m else p for p, m in zip(params, mask)]
            try:
                result = wrapped(*args, **kwargs)
            finally:
                instance._params = params
        if check:
            if _thawed:
                for param in params:
                    _thawed.pop(param, None)
                if not _thawed:
                    rearm("freeze")  # nothing left that this step had to treat as frozen
            if skip is not None:
                _settle(params, skip)
        return result

    return wrapper
