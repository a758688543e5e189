"""``mxcompat.to_torch_optimizer``: MXNet's SGD (momentum), NAG, Adam and RMSProp as a
``torch.optim.Optimizer`` with MXNet's update rules, over a module ``to_torch`` made.

What MXNet does that PyTorch's optimizers do not, each kept here:

- the gradient is first multiplied by ``rescale_grad`` (Module: 1 / batch size; Trainer:
  its scale / the batch size given to ``step``), then clipped to ``clip_gradient``;
- weight decay ``wd`` is added to the gradient (SGD: inside the step, ``(1 - lr*wd) * w``),
  for Adam and RMSProp *before* the clipping;
- per-parameter ``lr_mult``/``wd_mult`` are MXNet's own: read through the optimizer's
  ``_get_lr``/``_get_wd`` (so a Module's default of no weight decay on biases and betas, a
  symbol's ``__lr_mult__``, a Gluon Parameter's ``lr_mult`` all hold);
- NAG's rule is the one this MXNet's kernel makes (it changed between 1.5 and 1.9:
  ``_nag_rule``);
- Adam's bias correction is folded into the learning rate (``lr * sqrt(1 - b2**t) / (1 -
  b1**t)``) and epsilon is added to ``sqrt(v)``; RMSProp's epsilon is inside the root;
- the learning-rate scheduler is MXNet's own (a copy: the original keeps its state), called
  with the number of updates so far;
- every hyper-parameter reaches MXNet's kernels as a float32 (``lr`` and ``wd`` after their
  multipliers and Adam's correction): rounded so here too, which a float64 model shows.

A parameter with ``requires_grad=False`` (frozen in MXNet) or without a gradient is not
touched, as MXNet skips a fixed parameter.  torch is imported at the first call.
"""

from __future__ import annotations

import copy
import math

from ..convert._common import _fail, _mx
from . import codegen

TYPE_CHECKING = False
if TYPE_CHECKING:
    import torch
    from mxnet.gluon import Trainer
    from mxnet.module import Module
    from mxnet.optimizer import Optimizer

WHERE = "to_torch_optimizer"
KINDS = ("sgd", "nag", "adam", "rmsprop")


def _kind(opt):
    mx = _mx()
    # The most derived first: MXNet's NAG subclasses SGD in some releases.
    for kind, cls in (
        ("nag", mx.optimizer.NAG),
        ("sgd", mx.optimizer.SGD),
        ("adam", mx.optimizer.Adam),
        ("rmsprop", mx.optimizer.RMSProp),
    ):
        if type(opt) is cls:
            return kind
    raise _fail(
        WHERE,
        "%s is not supported (MXNet's SGD, NAG, Adam and RMSProp are)" % type(opt).__name__,
        NotImplementedError,
    )


def _multipliers(opt, names):
    """{name: (lr_mult, wd_mult)} as the MXNet optimizer computes them, asked with lr = wd = 1
    and no scheduler (put back after)."""
    index_of = {}
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


def _r32(a):
    """a as MXNet's kernels receive it: their hyper-parameters are float32."""
    import numpy as np

    return float(np.float32(a))


def _f32(a, b):
    """a - b as MXNet's kernels compute it, in float32 (their parameters are floats)."""
    import numpy as np

    return float(np.float32(a) - np.float32(b))


_NAG_RULE: list = []  # the rule found, once asked


def _nag_rule():
    """Which NAG update this MXNet's ``nag_mom_update`` makes, asked of it on one number (its
    kernel changed between releases; both are MXNet's, neither is PyTorch's):

    - ``accumulate`` (1.5): ``mom = m*mom + g + wd*w; w -= lr * (g + m*mom)``;
    - ``lookahead`` (1.9): ``s = lr*(g + wd*w); w += m*(m*mom - s) - s``, then
      ``mom = m*mom - lr*(g + wd*w)`` with the *new* w (its output is the weight)."""
    if _NAG_RULE:
        return _NAG_RULE[0]
    mx = _mx()
    w, mom = mx.nd.array([1.0]), mx.nd.array([0.5])
    mx.nd.nag_mom_update(w, mx.nd.array([1.0]), mom, out=w, lr=0.1, momentum=0.9, wd=0.2)
    got = (float(w.asnumpy()[0]), float(mom.asnumpy()[0]))
    rules = {"accumulate": (0.7515, 1.65), "lookahead": (1.177, 0.32646)}
    for rule, want in rules.items():
        if all(abs(a - b) < 1e-4 for a, b in zip(got, want)):
            _NAG_RULE.append(rule)
            return rule
    raise _fail(
        WHERE,
        "MXNet %s's NAG update is neither rule known (w, mom = %r)" % (mx.__version__, got),
        NotImplementedError,
    )


def _optimizer_class(torch):
    class MXNetOptimizer(torch.optim.Optimizer):
        """MXNet's update rule (``kind``) over a converted module's parameters; each
        parameter group holds one parameter, its ``name`` and MXNet's ``lr_mult``/
        ``wd_mult``.  ``rescale_grad``, ``lr`` and ``wd`` are the groups' settings."""

        def __init__(self, groups, kind, settings, scheduler, begin):
            super().__init__(groups, dict(settings))
            self.kind, self.scheduler, self.num_update = kind, scheduler, begin
            self.begin = begin
            self.nag_rule = _nag_rule() if kind == "nag" else None

        def current_lr(self, group):
            base = self.scheduler(self.num_update) if self.scheduler is not None else group["lr"]
            return base * group["lr_mult"]

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            active = [g for g in self.param_groups if g["params"][0].grad is not None]
            if active:
                self.num_update += 1
            for group in active:
                self._update(group["params"][0], group)
            return loss

        def _update(self, w, group):
            kind = self.kind
            base_lr = self.current_lr(group)  # the scheduler's once per update
            lr = _r32(base_lr)
            wd = _r32(group["wd"] * group["wd_mult"])
            clip = group["clip_gradient"]
            g = w.grad * group["rescale_grad"]
            state = self.state[w]
            if kind == "sgd":
                if clip:
                    g = g.clamp(-clip, clip)
                if group["momentum"] > 0:
                    mom = state.setdefault("mom", torch.zeros_like(w))
                    mom.mul_(group["momentum"]).sub_(lr * wd * w).sub_(lr * g)
                    w.add_(mom)
                else:
                    w.mul_(1.0 - lr * wd).sub_(lr * g)
                return
            if kind == "nag":
                if clip:
                    g = g.clamp(-clip, clip)
                m = group["momentum"]
                if m <= 0:
                    w.mul_(1.0 - lr * wd).sub_(lr * g)  # MXNet's sgd_update then
                    return
                mom = state.setdefault("mom", torch.zeros_like(w))
                if self.nag_rule == "accumulate":
                    mom.mul_(m).add_(g + wd * w)
                    w.sub_(lr * (g + m * mom))
                else:
                    step = lr * (g + wd * w)
                    w.add_(m * (m * mom - step) - step)
                    # The kernel writes the weight first, then reads it for the momentum.
                    mom.mul_(m).sub_(lr * (g + wd * w))
                return
            g = g + wd * w
            if clip:
                g = g.clamp(-clip, clip)
            if kind == "adam":
                t = state["step"] = state.get("step", self.begin) + 1
                b1, b2 = group["beta1"], group["beta2"]
                # The correction in double, as MXNet's Python computes it; the kernel's
                # betas and 1 - beta in float32.
                lr = _r32(base_lr * math.sqrt(1.0 - b2**t) / (1.0 - b1**t))
                mean = state.setdefault("mean", torch.zeros_like(w))
                var = state.setdefault("var", torch.zeros_like(w))
                mean.mul_(_r32(b1)).add_(_f32(1.0, b1) * g)
                var.mul_(_r32(b2)).add_(_f32(1.0, b2) * g.square())
                w.sub_(lr * mean / (var.sqrt() + group["epsilon"]))
                return
            g1, eps = group["gamma1"], group["epsilon"]
            n = state.setdefault("n", torch.zeros_like(w))
            n.mul_(g1).add_(_f32(1.0, g1) * g.square())
            if group["centered"]:
                mg = state.setdefault("g", torch.zeros_like(w))
                delta = state.setdefault("delta", torch.zeros_like(w))
                mg.mul_(g1).add_(_f32(1.0, g1) * g)
                delta.mul_(group["gamma2"]).sub_(lr * g / (n - mg.square() + eps).sqrt())
                w.add_(delta)
            else:
                w.sub_(lr * g / (n + eps).sqrt())
            if group["clip_weights"]:
                w.clamp_(-group["clip_weights"], group["clip_weights"])

    return MXNetOptimizer


def to_torch_optimizer(
    mx_optimizer: Optimizer | Trainer | Module,
    torch_module: torch.nn.Module,
    *,
    batch_size: int | None = None,
) -> torch.optim.Optimizer:
    """MXNet's optimizer as a ``torch.optim.Optimizer`` over ``torch_module`` (made by
    ``to_torch``: its parameters carry MXNet's names), updating each parameter as MXNet
    would: SGD (with momentum), NAG, Adam and RMSProp (plain and centered), with
    ``rescale_grad``, ``clip_gradient``, ``wd``, MXNet's per-parameter ``lr_mult`` and
    ``wd_mult`` and its learning-rate scheduler.

    ``mx_optimizer``: an ``mxnet.optimizer.Optimizer``, a Gluon ``Trainer`` or a Module whose
    optimizer is initialised (theirs is taken, with its multipliers).  A Trainer scales the
    gradient by its scale over the ``batch_size`` its ``step`` is given: pass the same
    ``batch_size`` here.  Parameters with ``requires_grad=False`` are left alone."""
    from .convert import import_torch

    torch = import_torch("mxcompat.to_torch_optimizer")
    mx = _mx()
    rescale = None
    if isinstance(mx_optimizer, mx.gluon.Trainer):
        if batch_size is None:
            raise _fail(
                WHERE,
                "a Trainer's gradient scale is its scale / the batch_size its step() is "
                "given: pass batch_size=",
            )
        if getattr(mx_optimizer, "_optimizer", None) is None:
            mx_optimizer._init_optimizer(mx_optimizer._optimizer, mx_optimizer._optimizer_params)
        rescale = mx_optimizer._scale / batch_size
        opt = mx_optimizer._optimizer
    elif isinstance(mx_optimizer, mx.mod.BaseModule):
        if not getattr(mx_optimizer, "optimizer_initialized", False):
            raise _fail(WHERE, "the Module's optimizer is not initialised (init_optimizer)")
        opt = mx_optimizer._optimizer
    elif isinstance(mx_optimizer, mx.optimizer.Optimizer):
        opt = mx_optimizer
    else:
        raise _fail(
            WHERE,
            "expected an mxnet Optimizer, a Gluon Trainer or a Module, got %s"
            % type(mx_optimizer).__name__,
            TypeError,
        )
    if not isinstance(torch_module, torch.nn.Module):
        raise _fail(WHERE, "torch_module is a torch.nn.Module, not %r" % (torch_module,), TypeError)
    kind = _kind(opt)
    if getattr(opt, "multi_precision", False):
        raise _fail(WHERE, "multi_precision=True is not supported", NotImplementedError)
    named = [(n, p) for n, p in torch_module.named_parameters()]
    mults = _multipliers(opt, [codegen.mxnet_name(n) for n, _ in named])
    settings = {
        "lr": opt.lr,
        "wd": opt.wd,
        "rescale_grad": _r32(opt.rescale_grad if rescale is None else rescale),
        "clip_gradient": _r32(opt.clip_gradient or 0.0),
    }
    if kind in ("sgd", "nag"):
        settings["momentum"] = _r32(opt.momentum)
    elif kind == "adam":
        # The betas as given: Python's bias correction reads them in double.
        settings.update(beta1=opt.beta1, beta2=opt.beta2, epsilon=_r32(opt.epsilon))
    else:
        settings.update(
            gamma1=_r32(opt.gamma1),
            gamma2=_r32(opt.gamma2),
            epsilon=_r32(opt.epsilon),
            centered=bool(opt.centered),
            clip_weights=_r32(opt.clip_weights or 0.0),
        )
    groups = []
    for name, param in named:
        lr_mult, wd_mult = mults[codegen.mxnet_name(name)]
        groups.append({"params": [param], "name": name, "lr_mult": lr_mult, "wd_mult": wd_mult})
    scheduler = copy.deepcopy(opt.lr_scheduler) if opt.lr_scheduler is not None else None
    begin = getattr(opt, "begin_num_update", 0) or 0
    return _optimizer_class(torch)(groups, kind, settings, scheduler, begin)
