"""``mxcompat.to_torch_optimizer``: MXNet's SGD (momentum), NAG, Adam and RMSProp as a
``torch.optim.Optimizer`` with MXNet's update rules (``optim_rules``), over a module
``to_torch`` made, resuming where MXNet stopped: the momentum, Adam's moments, RMSProp's
averages, the update counts and the scheduler's position (``optim_state`` reads them, from a
live Trainer or Module or from a states file).

Read here, through MXNet: the settings, as each kernel receives them (float32); per-parameter
``lr_mult``/``wd_mult`` through the optimizer's own ``_get_lr``/``_get_wd`` (so a Module's
default of no weight decay on biases and betas, a symbol's ``__lr_mult__``, a Gluon
Parameter's ``lr_mult`` all hold); which NAG rule this MXNet's kernel makes (``_nag_rule``).

A parameter with ``requires_grad=False`` (frozen in MXNet) or without a gradient is not
touched, as MXNet skips a fixed parameter.  torch is imported at the first call.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from .._core.conversion import fail, import_mxnet, mxnet_importable
from . import codegen

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np
    import torch
    from mxnet.gluon import Trainer
    from mxnet.module import Module
    from mxnet.optimizer import Optimizer

WHERE = "to_torch_optimizer"


def _multipliers(opt: Optimizer, names: Iterable[str]) -> dict[str, tuple[float, float]]:
    """{name: (lr_mult, wd_mult)} as the MXNet optimizer computes them, asked with lr = wd = 1
    and no scheduler (put back after)."""
    index_of: dict[str, Any] = {}
    for index, param in (getattr(opt, "param_dict", None) or {}).items():
        index_of[param.name] = index
    for index, name in (getattr(opt, "idx2name", None) or {}).items():
        index_of.setdefault(name, index)
    saved = opt.lr, opt.wd, opt.lr_scheduler
    opt.lr, opt.wd, opt.lr_scheduler = 1.0, 1.0, None
    try:
        # A name the optimizer has no index for is looked up by name (its lr_mult/wd_mult
        # dicts accept names).
        return {
            n: (opt._get_lr(index_of.get(n, n)), opt._get_wd(index_of.get(n, n))) for n in names
        }
    finally:
        opt.lr, opt.wd, opt.lr_scheduler = saved


_NAG_RULE: list[str] = []  # the rule found, once asked


def _nag_rule() -> str:
    """Which NAG update this MXNet's ``nag_mom_update`` makes, asked of it on one number (its
    kernel changed between releases; both are MXNet's, neither is PyTorch's):

    - ``accumulate`` (1.5): ``mom = m*mom + g + wd*w; w -= lr * (g + m*mom)``;
    - ``lookahead`` (1.9): ``s = lr*(g + wd*w); w += m*(m*mom - s) - s``, then
      ``mom = m*mom - lr*(g + wd*w)`` with the *new* w (its output is the weight)."""
    if _NAG_RULE:
        return _NAG_RULE[0]
    if not mxnet_importable():
        raise fail(
            WHERE,
            "NAG's update changed between MXNet releases and only MXNet's own kernel says "
            "which rule it makes: resume a NAG optimizer where MXNet is installed",
            NotImplementedError,
        )
    mx = import_mxnet()
    w, mom = mx.nd.array([1.0]), mx.nd.array([0.5])
    mx.nd.nag_mom_update(w, mx.nd.array([1.0]), mom, out=w, lr=0.1, momentum=0.9, wd=0.2)
    got = (float(w.asnumpy()[0]), float(mom.asnumpy()[0]))
    rules = {"accumulate": (0.7515, 1.65), "lookahead": (1.177, 0.32646)}
    for rule, want in rules.items():
        if all(abs(a - b) < 1e-4 for a, b in zip(got, want)):
            _NAG_RULE.append(rule)
            return rule
    raise fail(
        WHERE,
        "MXNet %s's NAG update is neither rule known (w, mom = %r)" % (mx.__version__, got),
        NotImplementedError,
    )


def _source(
    mx_optimizer: Optimizer | Trainer | Module, batch_size: int | None
) -> tuple[Optimizer, float | None]:
    """(MXNet optimizer, the Trainer's rescale_grad or None) of what the caller gave."""
    mx = import_mxnet()
    if isinstance(mx_optimizer, mx.gluon.Trainer):
        if batch_size is None:
            raise fail(
                WHERE,
                "a Trainer's gradient scale is its scale / the batch_size its step() is "
                "given: pass batch_size=",
            )
        if getattr(mx_optimizer, "_optimizer", None) is None:
            mx_optimizer._init_optimizer(mx_optimizer._optimizer, mx_optimizer._optimizer_params)
        return mx_optimizer._optimizer, mx_optimizer._scale / batch_size
    if isinstance(mx_optimizer, mx.mod.BaseModule):
        if not getattr(mx_optimizer, "optimizer_initialized", False):
            raise fail(WHERE, "the Module's optimizer is not initialised (init_optimizer)")
        return mx_optimizer._optimizer, None
    if isinstance(mx_optimizer, mx.optimizer.Optimizer):
        return mx_optimizer, None
    raise fail(
        WHERE,
        "expected an mxnet Optimizer, a Gluon Trainer or a Module, got %s"
        % type(mx_optimizer).__name__,
        TypeError,
    )


def _settings(
    kind: str, found: Mapping[str, Any], rescale: float | None, r32: Callable[[float], float]
) -> dict[str, Any]:
    """The torch optimizer's group settings from ``found`` (``optim_state.describe``), each as
    MXNet's kernel receives it."""
    settings = {
        "lr": found["lr"],
        "wd": found["wd"],
        "rescale_grad": r32(found["rescale_grad"] if rescale is None else rescale),
        "clip_gradient": r32(found.get("clip_gradient") or 0.0),
    }
    if kind in ("sgd", "nag"):
        settings["momentum"] = r32(found["momentum"])
    elif kind == "adam":
        # The betas as given: Python's bias correction reads them in double.
        settings.update(beta1=found["beta1"], beta2=found["beta2"], epsilon=r32(found["epsilon"]))
    else:
        settings.update(
            gamma1=r32(found["gamma1"]),
            gamma2=r32(found["gamma2"]),
            epsilon=r32(found["epsilon"]),
            centered=bool(found["centered"]),
            clip_weights=r32(found.get("clip_weights") or 0.0),
        )
    return settings


def _mxnet_names(module: torch.nn.Module) -> Callable[[str], str]:
    """torch name -> MXNet name: the converted module's own map (``mxnet_names``), else the
    names as they are (a module whose parameters carry their MXNet names, ``%2E`` for ``.``)."""
    own = getattr(module, "mxnet_names", None) or {}
    return lambda name: own.get(name) or codegen.mxnet_name(name)


def _carry(
    topt: torch.optim.Optimizer,
    kind: str,
    centered: bool | None,
    arrays: Mapping[Any, Sequence[np.ndarray]],
    counts: Mapping[Any, int],
    names: Mapping[Any, str],
    named: Sequence[tuple[str, torch.nn.Parameter]],
    torch: Any,
    mxnet_name: Callable[[str], str],
) -> None:
    """Put MXNet's states (``{index: arrays}``) and Adam's per-parameter counts into
    ``topt.state``, by parameter name; a state for no parameter of the module, or of
    another shape, is an error (never a silent restart)."""
    from .optim_rules import state_names

    keys = state_names(kind, centered)
    # Looked up by a state's name, None for an index of no name (refused below).
    by_name: dict[str | None, Any] = {mxnet_name(n): p for n, p in named}
    done = set()
    # A Module's updater holds one state per context (index i * contexts + k), the same
    # after every synchronous step: the lowest index (the first context's) is taken.
    for index in sorted(arrays, key=lambda i: (isinstance(i, str), str(i).zfill(12))):
        name = names.get(index, index if isinstance(index, str) else None)
        if name in done:
            continue
        done.add(name)
        param = by_name.get(name)
        if param is None:
            raise fail(
                WHERE,
                "the optimizer holds a state for %r (index %r), which is no parameter of "
                "the module" % (name, index),
            )
        state = arrays[index]
        if len(state) != len(keys) and state:
            raise fail(
                WHERE,
                "the state of %r has %d array(s), MXNet's %s makes %d"
                % (name, len(state), kind, len(keys)),
            )
        for key, value in zip(keys, state):
            if tuple(value.shape) != tuple(param.shape):
                raise fail(
                    WHERE,
                    "the %s state of %r is %s, the parameter %s"
                    % (key, name, tuple(value.shape), tuple(param.shape)),
                )
            topt.state[param][key] = torch.from_numpy(value.copy()).to(param)
        if kind == "adam" and index in counts:  # its bias correction's t
            topt.state[param]["step"] = int(counts[index])


def to_torch_optimizer(
    mx_optimizer: Optimizer | Trainer | Module | None,
    torch_module: torch.nn.Module,
    *,
    batch_size: int | None = None,
    states: str | None = None,
) -> torch.optim.Optimizer:
    """MXNet's optimizer as a ``torch.optim.Optimizer`` over ``torch_module`` (made by
    ``to_torch``: its parameters carry MXNet's names), updating each parameter as MXNet
    would: SGD (with momentum), NAG, Adam and RMSProp (plain and centered), with
    ``rescale_grad``, ``clip_gradient``, ``wd``, MXNet's per-parameter ``lr_mult`` and
    ``wd_mult`` and its learning-rate scheduler, and resuming where MXNet stopped.

    ``mx_optimizer``: an ``mxnet.optimizer.Optimizer``, a Gluon ``Trainer`` or a Module whose
    optimizer is initialised (theirs is taken, with its multipliers, its states: momentum,
    Adam's mean and variance, RMSProp's averages, and its update counts with the scheduler's
    position).  A Trainer scales the gradient by its scale over the ``batch_size`` its
    ``step`` is given: pass the same ``batch_size`` here.

    ``states``: a file ``Module.save_optimizer_states`` or ``Trainer.save_states`` wrote, read
    in place of the updater's states, as MXNet's ``load_optimizer_states``/``load_states``
    would: the file's optimizer (a Trainer's file holds it) then gives the settings, the
    counts and the scheduler.  With ``mx_optimizer=None`` the file alone is read, without
    MXNet (a Trainer's file that names its parameters: MXNet 1.0-1.2's; the gradient scale
    its last step used).  Parameters with ``requires_grad=False`` are left alone."""
    return _build(mx_optimizer, torch_module, batch_size, states, None)


def _build(
    mx_optimizer: Any,
    torch_module: Any,
    batch_size: int | None,
    states: str | None,
    file_names: Mapping[Any, str] | None,
) -> Any:
    """``to_torch_optimizer``; ``file_names``: {index: name} for a states file that names
    none (``mxcompat torch --states``: matched against the checkpoint)."""
    from . import optim_rules, optim_state
    from .convert import import_torch

    torch = import_torch("mxcompat.to_torch_optimizer")
    if mx_optimizer is None:
        if states is None:
            raise fail(WHERE, "mx_optimizer=None needs states=FILE (a Trainer's)", TypeError)
        opt, rescale = None, None
    else:
        opt, rescale = _source(mx_optimizer, batch_size)
    if not isinstance(torch_module, torch.nn.Module):
        raise fail(WHERE, "torch_module is a torch.nn.Module, not %r" % (torch_module,), TypeError)
    found = optim_state.describe(opt) if opt is not None else {}
    names = optim_state.index_names(mx_optimizer, opt) if opt is not None else {}
    if states is not None:
        arrays, in_file = optim_state.read_states_file(states)
        if opt is None and not in_file:
            raise fail(
                WHERE,
                "%s holds the optimizer's states only, not its settings (Module."
                "save_optimizer_states writes them so): pass the Module or its optimizer "
                "too" % states,
            )
        found.update(in_file)
        if not names:
            names = dict(in_file.get("idx2name") or {}) or dict(file_names or {})
        if not names:
            raise fail(
                WHERE,
                "%s names no parameter (a Trainer's file from MXNet 1.3 on): pass the Trainer "
                "too, or convert with mxcompat torch PREFIX EPOCH --states FILE" % states,
            )
    else:
        arrays = optim_state.live_states(mx_optimizer)
    kind = found["kind"]
    if found.get("multi_precision"):
        raise fail(WHERE, "multi_precision=True is not supported", NotImplementedError)
    named = list(torch_module.named_parameters())
    mxnet_name = _mxnet_names(torch_module)
    if opt is not None:
        mults = _multipliers(opt, [mxnet_name(n) for n, _ in named])
    else:
        found["idx2name"] = names
        mults = optim_state.multipliers(found, [mxnet_name(n) for n, _ in named])
    settings = _settings(kind, found, rescale, optim_rules.r32)
    multipliers = {n: mults[mxnet_name(n)] for n, _ in named}
    begin = found.get("begin_num_update", 0) or 0
    topt = optim_rules.build(
        torch_module,
        kind,
        settings,
        multipliers,
        scheduler=found["lr_scheduler"],
        num_update=found.get("num_update", begin) or begin,
        begin=begin,
        nag_rule=_nag_rule() if kind == "nag" else None,
    )
    counts = found.get("update_counts") or {}
    _carry(topt, kind, settings.get("centered"), arrays, counts, names, named, torch, mxnet_name)
    return topt
