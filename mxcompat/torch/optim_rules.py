"""MXNet's update rules (SGD with momentum, NAG, Adam, RMSProp plain and centered) and its
learning-rate schedulers, in torch only: ``to_torch_optimizer`` builds ``MXNetOptimizer``
from here, and ``mxcompat torch --states`` copies this file beside ``model.py`` as
``mxnet_optim.py``, so that a script with torch alone resumes the training:

    import torch, model, mxnet_optim
    net = model.MXNetModel(); net.load_state_dict(...)
    opt = mxnet_optim.load(net, "optimizer.pt")

What MXNet does that PyTorch's optimizers do not, each kept here:

- the gradient is first multiplied by ``rescale_grad``, then clipped to ``clip_gradient``;
- weight decay: SGD's inside the step (``(1 - lr*wd) * w``), Adam's and RMSProp's added to the
  gradient *before* the clipping;
- NAG's rule is the one the converting MXNet's kernel makes (it changed between 1.5 and 1.9;
  ``nag_rule`` in the settings);
- Adam's bias correction is folded into the learning rate with the parameter's own update
  count, and epsilon is added to ``sqrt(v)``; RMSProp's epsilon is inside the root;
- the scheduler is called with the number of updates so far, and keeps its position;
- every hyper-parameter reaches MXNet's kernels as a float32: rounded so here too.

It must run with torch alone: it imports nothing of mxcompat or MXNet."""

import math
import struct

import torch

# The names of each kind's state arrays, in the order MXNet's ``create_state`` makes them.
STATE_NAMES = {
    "sgd": ("mom",),
    "nag": ("mom",),
    "adam": ("mean", "var"),
    "rmsprop": ("n",),
    "rmsprop_centered": ("n", "g", "delta"),
}
MULTS = ("lr_mult", "wd_mult")  # a parameter group's own multipliers


def state_names(kind, centered=False):
    """The names of one parameter's state arrays for ``kind``, as MXNet orders them."""
    return STATE_NAMES["rmsprop_centered" if kind == "rmsprop" and centered else kind]


def r32(a):
    """a as MXNet's kernels receive it: their hyper-parameters are float32."""
    return struct.unpack("f", struct.pack("f", a))[0]


def f32_sub(a, b):
    """a - b as MXNet's kernels compute it, in float32."""
    return r32(r32(a) - r32(b))


class Schedule:
    """One of MXNet's learning-rate schedulers (Factor, MultiFactor, Poly, Cosine; with
    warmup) from its attributes, ``{"class": name, ...}``: the same values, the same state
    kept between calls (``FactorScheduler`` moves its ``base_lr`` as it passes each step)."""

    KINDS = (
        "FactorScheduler",
        "MultiFactorScheduler",
        "PolyScheduler",
        "CosineScheduler",
    )

    def __init__(self, attrs):
        if attrs.get("class") not in self.KINDS:
            raise ValueError(
                f"learning-rate scheduler {attrs.get('class')!r} is not supported "
                f"({', '.join(self.KINDS)} are)"
            )
        self.attrs = dict(attrs)

    def state(self):
        return dict(self.attrs)

    def _warmup(self, n):
        a = self.attrs
        if a.get("warmup_mode", "linear") == "constant":
            return a["warmup_begin_lr"]
        span = a["warmup_final_lr"] - a["warmup_begin_lr"]
        rise = span * float(n) / float(a["warmup_steps"])
        return a["warmup_begin_lr"] + rise

    def __call__(self, n):
        a = self.attrs
        if n < a.get("warmup_steps", 0):
            return self._warmup(n)
        kind = a["class"]
        if kind == "FactorScheduler":
            while n > a["count"] + a["step"]:
                a["count"] += a["step"]
                a["base_lr"] = max(a["base_lr"] * a["factor"], a["stop_factor_lr"])
        elif kind == "MultiFactorScheduler":
            steps = a["step"]
            while a["cur_step_ind"] < len(steps) and n > steps[a["cur_step_ind"]]:
                a["count"] = steps[a["cur_step_ind"]]
                a["cur_step_ind"] += 1
                a["base_lr"] *= a["factor"]
        elif n <= a["max_update"]:
            span = a["base_lr_orig"] - a["final_lr"]
            # Each formula in MXNet's order of operations: the same rounding.
            if kind == "PolyScheduler":
                done = float(n - a["warmup_steps"]) / float(a["max_steps"])
                a["base_lr"] = a["final_lr"] + span * pow(1 - done, a["power"])
            else:
                turn = math.pi * (n - a["warmup_steps"]) / a["max_steps"]
                a["base_lr"] = a["final_lr"] + span * (1 + math.cos(turn)) / 2
        return a["base_lr"]


class MXNetOptimizer(torch.optim.Optimizer):
    """MXNet's update rule (``kind``) over a converted module's parameters; each parameter
    group holds one parameter, its MXNet ``name``, ``lr_mult`` and ``wd_mult``, and the
    settings (``lr``, ``wd``, ``rescale_grad``, ...).  ``num_update`` is MXNet's count of
    updates (what the scheduler reads); Adam's per-parameter count is ``state[p]["step"]``.
    ``state_dict()`` carries both and the scheduler's position: ``load_state_dict`` resumes
    exactly."""

    def __init__(
        self,
        groups,
        kind,
        settings,
        scheduler=None,
        num_update=0,
        begin=0,
        nag_rule=None,
    ):
        super().__init__(groups, dict(settings))
        self.kind, self.num_update, self.begin, self.nag_rule = (
            kind,
            num_update,
            begin,
            nag_rule,
        )
        if scheduler is not None and not callable(scheduler):
            scheduler = Schedule(scheduler)
        self.scheduler = scheduler
        if kind == "nag" and nag_rule not in ("accumulate", "lookahead"):
            raise ValueError("NAG needs its rule: nag_rule='accumulate' or 'lookahead'")

    def current_lr(self, group):
        if self.scheduler is None:
            return group["lr"] * group["lr_mult"]
        return self.scheduler(self.num_update) * group["lr_mult"]

    def state_dict(self):
        out = super().state_dict()
        sched = self.scheduler
        out["mxnet"] = {
            "kind": self.kind,
            "num_update": self.num_update,
            "begin": self.begin,
            "nag_rule": self.nag_rule,
            "scheduler": sched.state() if isinstance(sched, Schedule) else sched,
        }
        return out

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        ours = state_dict.pop("mxnet", None)
        if ours is not None:
            if ours["kind"] != self.kind:
                kind = ours["kind"]
                raise ValueError(f"a state of MXNet's {kind}, not {self.kind}")
            self.num_update, self.begin = ours["num_update"], ours["begin"]
            self.nag_rule = ours["nag_rule"]
            sched = ours["scheduler"]
            self.scheduler = Schedule(sched) if isinstance(sched, dict) else sched
        super().load_state_dict(state_dict)

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
        lr = r32(base_lr)
        wd = r32(group["wd"] * group["wd_mult"])
        clip = group["clip_gradient"]
        g = w.grad * group["rescale_grad"]
        state = self.state[w]
        if kind in ("sgd", "nag"):
            if clip:
                g = g.clamp(-clip, clip)
            m = group["momentum"]
            if m <= 0:
                # MXNet's sgd_update (NAG's too then)
                w.mul_(1.0 - lr * wd).sub_(lr * g)
                return
            mom = state.setdefault("mom", torch.zeros_like(w))
            if kind == "sgd":
                mom.mul_(m).sub_(lr * wd * w).sub_(lr * g)
                w.add_(mom)
            elif self.nag_rule == "accumulate":
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
            # The correction in double, as MXNet's Python computes it; the kernel's betas
            # and 1 - beta in float32.
            lr = r32(base_lr * math.sqrt(1.0 - b2**t) / (1.0 - b1**t))
            mean = state.setdefault("mean", torch.zeros_like(w))
            var = state.setdefault("var", torch.zeros_like(w))
            mean.mul_(r32(b1)).add_(f32_sub(1.0, b1) * g)
            var.mul_(r32(b2)).add_(f32_sub(1.0, b2) * g.square())
            w.sub_(lr * mean / (var.sqrt() + group["epsilon"]))
            return
        g1, eps = group["gamma1"], group["epsilon"]
        n = state.setdefault("n", torch.zeros_like(w))
        n.mul_(g1).add_(f32_sub(1.0, g1) * g.square())
        if group["centered"]:
            mg = state.setdefault("g", torch.zeros_like(w))
            delta = state.setdefault("delta", torch.zeros_like(w))
            mg.mul_(g1).add_(f32_sub(1.0, g1) * g)
            delta.mul_(group["gamma2"]).sub_(lr * g / (n - mg.square() + eps).sqrt())
            w.add_(delta)
        else:
            w.sub_(lr * g / (n + eps).sqrt())
        if group["clip_weights"]:
            w.clamp_(-group["clip_weights"], group["clip_weights"])


def build(module, kind, settings, multipliers=None, **rest):
    """An ``MXNetOptimizer`` over ``module``'s parameters: ``multipliers`` maps a parameter's
    name (the module's) to its ``(lr_mult, wd_mult)`` (default 1, 1); ``rest`` goes to the
    optimizer (``scheduler``, ``num_update``, ``begin``, ``nag_rule``)."""
    groups = []
    for name, param in module.named_parameters():
        lr_mult, wd_mult = (multipliers or {}).get(name, (1.0, 1.0))
        group = {
            "params": [param],
            "name": name,
            "lr_mult": lr_mult,
            "wd_mult": wd_mult,
        }
        groups.append(group)
    return MXNetOptimizer(groups, kind, settings, **rest)


def save(optimizer, path):
    """Write what ``load`` needs to rebuild ``optimizer`` (torch.save: its ``state_dict()``
    with every group's settings and multipliers, the kind, the update count, the scheduler)."""
    scheduler = optimizer.scheduler
    if scheduler is not None and not isinstance(scheduler, Schedule):
        raise ValueError(
            f"the learning-rate scheduler {type(scheduler).__name__} cannot be saved "
            f"for torch alone ({', '.join(Schedule.KINDS)} can)"
        )
    torch.save({"format": "mxnet_optim/1", "state_dict": optimizer.state_dict()}, path)


def load(module, path, map_location=None):
    """The optimizer ``save`` wrote, over ``module`` (the same converted model), resumed."""
    blob = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(blob, dict) or blob.get("format") != "mxnet_optim/1":
        raise ValueError(f"{path} is not an optimizer file written by mxcompat")
    sd = blob["state_dict"]
    groups = sd["param_groups"]
    ours = sd["mxnet"]
    kept = ("params", "name") + MULTS
    settings = {k: v for k, v in groups[0].items() if k not in kept}
    mults = {g["name"]: (g["lr_mult"], g["wd_mult"]) for g in groups}
    names = [n for n, _ in module.named_parameters()]
    if names != [g["name"] for g in groups]:
        message = f"{path} was written for another module (its parameters differ)"
        raise ValueError(message)
    opt = build(module, ours["kind"], settings, mults, nag_rule=ours["nag_rule"])
    opt.load_state_dict(sd)
    return opt
