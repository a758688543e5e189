"""Where MXNet keeps an optimizer's state, read as plain values for ``to_torch_optimizer``.

- The states: an ``Updater``'s ``states``, one entry per index (``None`` for SGD without
  momentum, an NDArray for SGD's and NAG's momentum, a tuple for Adam's mean and variance and
  RMSProp's ``n`` or ``(n, g, delta)``).  A Gluon Trainer holds one Updater per context
  (``_updaters``, indexed by the parameter's position in ``trainer._params``); a Module holds
  ``_updater`` (indexed ``i * contexts + k`` for its ``i``-th parameter name on context ``k``:
  the optimizer's ``idx2name``).  With ``update_on_kvstore`` they are the kvstore's
  ``_updater`` (a Module's are keyed by parameter name there).
- The counts: the optimizer's ``_index_update_count`` (per index: Adam's bias correction reads
  it) and ``num_update`` (their largest: the scheduler reads it), both starting at
  ``begin_num_update``.
- A states file (``Module.save_optimizer_states``, ``Trainer.save_states``) is the Updater's
  states pickled, or ``(states, optimizer)`` when the optimizer was dumped with them (a
  Trainer's always): only then does it hold settings and counts.

``read_states_file`` is the one place a file is read: ``path -> (states, found)``, plain
values only (numpy arrays, numbers, strings, dicts), read without MXNet (``states_file``:
MXNet's classes as records, no other class is unpickled)."""

from __future__ import annotations

import copy
from typing import Any

from .._core.conversion import fail, import_mxnet
from ..formats import states_file
from ..formats.checkpoint import CheckpointError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np

WHERE = "to_torch_optimizer"
SCHEDULERS = ("FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler")
# An optimizer's settings as ``describe`` and ``read_states_file`` give them (those it has).
SETTINGS = (
    "lr",
    "wd",
    "rescale_grad",
    "clip_gradient",
    "momentum",
    "beta1",
    "beta2",
    "epsilon",
    "gamma1",
    "gamma2",
    "centered",
    "clip_weights",
    "multi_precision",
    "begin_num_update",
    "num_update",
)


def kind_of(opt: Any) -> str:
    """``opt``'s update rule: 'sgd', 'nag', 'adam' or 'rmsprop' (exactly MXNet's classes)."""
    mx = import_mxnet()
    # The most derived first: MXNet's NAG subclasses SGD in some releases.
    for kind, cls in (
        ("nag", mx.optimizer.NAG),
        ("sgd", mx.optimizer.SGD),
        ("adam", mx.optimizer.Adam),
        ("rmsprop", mx.optimizer.RMSProp),
    ):
        if type(opt) is cls:
            return kind
    raise fail(
        WHERE,
        "%s is not supported (MXNet's SGD, NAG, Adam and RMSProp are)" % type(opt).__name__,
        NotImplementedError,
    )


def _scheduler(sched: Any) -> Any:
    """MXNet's scheduler as its attributes (``{"class": name, ...}``: its position included),
    or, for one of the user's own classes, a copy of the object (usable in this process)."""
    if sched is None:
        return None
    cls = type(sched)
    if cls.__name__ in SCHEDULERS and cls.__module__.startswith("mxnet"):
        return dict(copy.deepcopy(vars(sched)), **{"class": cls.__name__})
    return copy.deepcopy(sched)


def describe(opt: Any) -> dict[str, Any]:
    """An MXNet optimizer's kind, settings, update counts and scheduler as plain values."""
    found: dict[str, Any] = {"kind": kind_of(opt)}
    for name in SETTINGS:
        if hasattr(opt, name):
            found[name] = getattr(opt, name)
    found["update_counts"] = dict(getattr(opt, "_index_update_count", None) or {})
    found["idx2name"] = dict(getattr(opt, "idx2name", None) or {})
    found["lr_mult"] = dict(getattr(opt, "lr_mult", None) or {})
    found["wd_mult"] = dict(getattr(opt, "wd_mult", None) or {})
    found["lr_scheduler"] = _scheduler(opt.lr_scheduler)
    return found


def _arrays(state: Any) -> tuple[np.ndarray, ...]:
    """One index's state as a tuple of numpy arrays (``()`` for none)."""
    if state is None:
        return ()
    if isinstance(state, (tuple, list)):
        return tuple(a for s in state for a in _arrays(s))
    return (state.asnumpy(),)


def live_states(source: Any) -> dict[Any, tuple[np.ndarray, ...]]:
    """The states a Trainer's or a Module's updater holds now: ``{index: tuple of numpy
    arrays}`` (empty before the first update, and for a bare optimizer)."""
    mx = import_mxnet()
    if isinstance(source, mx.gluon.Trainer):
        if not getattr(source, "_kv_initialized", False):
            return {}
        on_kvstore = source._update_on_kvstore
        updater = source._kvstore._updater if on_kvstore else (source._updaters or [None])[0]
    elif isinstance(source, mx.mod.BaseModule):
        on_kvstore = getattr(source, "_update_on_kvstore", False)
        updater = source._kvstore._updater if on_kvstore else getattr(source, "_updater", None)
    else:
        return {}
    if updater is None:
        if on_kvstore:
            raise fail(
                WHERE,
                "the optimizer's states are on the kvstore's servers: save them there "
                "(save_optimizer_states) and pass states=FILE",
            )
        return {}
    return {index: _arrays(state) for index, state in updater.states.items()}


def _plain_arrays(state: Any) -> tuple[np.ndarray, ...]:
    """``_arrays`` for a state as the file reader gives it (numpy arrays already)."""
    if state is None:
        return ()
    if isinstance(state, (tuple, list)):
        return tuple(a for s in state for a in _plain_arrays(s))
    return (state,)


KINDS = {"NAG": "nag", "SGD": "sgd", "Adam": "adam", "RMSProp": "rmsprop"}


def _describe_record(opt: states_file.OptimizerRecord) -> dict[str, Any]:
    """``describe`` for an optimizer as the file reader gives it (a record of its class and
    attributes: MXNet need not be installed)."""
    kind = KINDS.get(opt.name) if opt.module.split(".")[0] == "mxnet" else None
    if kind is None:
        raise fail(
            WHERE,
            "%s is not supported (MXNet's SGD, NAG, Adam and RMSProp are)" % opt.name,
            NotImplementedError,
        )
    attrs = opt.attrs
    found: dict[str, Any] = {"kind": kind}
    found.update((name, attrs[name]) for name in SETTINGS if name in attrs)
    for key, attr in (
        ("update_counts", "_index_update_count"),
        ("idx2name", "idx2name"),
        ("lr_mult", "lr_mult"),
        ("wd_mult", "wd_mult"),
    ):
        found[key] = dict(attrs.get(attr) or {})
    # MXNet 1.0-1.2 pickle the optimizer with its parameter dictionary ({index: Gluon
    # Parameter}; 1.3 on leave it out): each index's name and its own lr_mult and wd_mult.
    params = attrs.get("param_dict") or {}
    found["param_mults"] = {}
    for index, param in params.items() if isinstance(params, dict) else ():
        if isinstance(param, states_file.OptimizerRecord) and param.name == "Parameter":
            found["idx2name"][index] = param.attrs.get("name")
            found["param_mults"][index] = (
                float(param.attrs.get("lr_mult", 1.0)),
                float(param.attrs.get("wd_mult", 1.0)),
            )
    sched = attrs.get("lr_scheduler")
    if isinstance(sched, states_file.OptimizerRecord):
        sched = dict(sched.attrs, **{"class": sched.name})
    found["lr_scheduler"] = sched
    return found


def multipliers(found: dict[str, Any], names: list[str]) -> dict[str, tuple[float, float]]:
    """{name: (lr_mult, wd_mult)} from what a states file holds (``read_states_file``'s
    ``found``), by the rule of MXNet's ``Optimizer._get_lr``/``_get_wd`` (the same in 1.0 ...
    1.9.1): the Parameter's own where the file has it, else the optimizer's ``lr_mult`` and
    ``wd_mult`` by index, else by the index's name, else 1."""
    idx2name = found.get("idx2name") or {}
    own = found.get("param_mults") or {}
    index_of = {name: index for index, name in idx2name.items()}
    result = {}
    for name in names:
        index = index_of.get(name, name)
        pair = []
        for key, k in (("lr_mult", 0), ("wd_mult", 1)):
            table = found.get(key) or {}
            if index in own:
                value = own[index][k]
            elif index in table:
                value = table[index]
            elif index in idx2name:
                value = table.get(idx2name[index], 1.0)
            else:
                value = 1.0
            pair.append(float(value))
        result[name] = (pair[0], pair[1])
    return result


def read_states_file(path: str) -> tuple[dict[Any, tuple[np.ndarray, ...]], dict[str, Any]]:
    """``(states, found)`` from a file ``Module.save_optimizer_states`` or
    ``Trainer.save_states`` wrote: ``states`` maps each index to a tuple of numpy arrays;
    ``found`` holds what ``describe`` gives when the file holds the optimizer too (its kind,
    settings, ``update_counts``, ``idx2name``, ``lr_scheduler``), else nothing.  Read without
    MXNet (``states_file``: MXNet's classes as records, no other class)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise fail(WHERE, "cannot read the states file %s: %s" % (path, exc)) from None
    try:
        read = states_file.states_from_bytes(data, str(path))
    except CheckpointError as exc:
        raise fail(
            WHERE, "%s is not an optimizer states file MXNet wrote (%s)" % (path, exc)
        ) from None
    found = _describe_record(read.optimizer) if read.optimizer is not None else {}
    return {index: _plain_arrays(state) for index, state in read.states.items()}, found


def index_names(source: Any, opt: Any) -> dict[Any, str]:
    """``{index: MXNet parameter name}`` for the updater of ``source`` (a Trainer: positions
    in its parameter list; otherwise the optimizer's ``idx2name``, a Module's repeated per
    context; a name as index stands for itself)."""
    mx = import_mxnet()
    if isinstance(source, mx.gluon.Trainer):
        return {i: p.name for i, p in enumerate(source._params)}
    names = dict(getattr(opt, "idx2name", None) or {})
    for index, param in (getattr(opt, "param_dict", None) or {}).items():
        names[index] = param.name
    return names
