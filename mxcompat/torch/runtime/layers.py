"""MXNet's layers where its semantics differ from torch's stock ones: ``BatchNorm`` (its
momentum, biased variance and ``fix_gamma``), ``Embedding`` (indices of any type), the
normalisations and the activations."""

import struct

import torch
import torch.nn.functional as F
from torch import nn


class BatchNorm(nn.Module):
    """MXNet's ``BatchNorm`` as a layer (``batch_norm``): ``momentum`` weighs the *old*
    statistic, in float32; training moves the running variance towards the batch's biased
    variance; ``fix_gamma`` takes the scale as 1; ``update_stats=False`` (statistics frozen in
    MXNet) leaves them; ``axis`` is the channel axis."""

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.9,
        fix_gamma=False,
        use_global_stats=False,
        axis=1,
        update_stats=True,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.fix_gamma, self.use_global_stats = fix_gamma, use_global_stats
        self.axis, self.update_stats = axis, update_stats
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        return batch_norm(
            x,
            self.weight,
            self.bias,
            self.running_mean,
            self.running_var,
            self.training,
            eps=self.eps,
            momentum=self.momentum,
            fix_gamma=self.fix_gamma,
            use_global_stats=self.use_global_stats,
            axis=self.axis,
            update_stats=self.update_stats,
        )

    def extra_repr(self):
        text = f"{self.num_features}, eps={self.eps!r}, momentum={self.momentum!r}"
        for key, default in (
            ("fix_gamma", False),
            ("use_global_stats", False),
            ("axis", 1),
            ("update_stats", True),
        ):
            if getattr(self, key) != default:
                text += f", {key}={getattr(self, key)!r}"
        return text


class Embedding(nn.Embedding):
    """MXNet's ``Embedding``: its indices may come in any type (MXNet feeds float32)."""

    def forward(self, x):
        return super().forward(x.long())


def batch_norm(
    x,
    gamma,
    beta,
    moving_mean,
    moving_var,
    training,
    eps,
    momentum,
    fix_gamma,
    use_global_stats,
    axis=1,
    update_stats=True,
):
    """MXNet's ``BatchNorm``.

    ``fix_gamma``: the stored gamma is set to 1 (as MXNet's forward sets it) and its gradient
    is 0 (a gradient, not None: MXNet's optimizer still applies weight decay to it from 1).
    ``momentum`` weighs the *old* statistic (PyTorch's is 1 - that).  In training (unless
    ``use_global_stats``) the batch's biased variance normalises and is what the running
    variance moves towards; ``update_stats=False`` (statistics frozen in MXNet) leaves them.
    MXNet moves the statistics in the backward of a training step, this in the training
    forward (as PyTorch does): the same after each step.

    One statistics pass: ``F.batch_norm`` (PyTorch's fused kernel, cuDNN's on a GPU) both
    normalises and moves the statistics.  It moves the running variance towards the
    *unbiased* variance, n/(n-1) times the biased one (n values per channel), so it is handed
    the running variance scaled by n/(n-1) and the result is scaled back: (1-m)*v*s +
    m*var*s, divided by s, is MXNet's (1-m)*v + m*var.  The scaled copy is a new tensor (the
    kernel keeps it for its backward), so the buffer itself is written only after."""
    if fix_gamma:
        # MXNet writes 1 into the stored gamma at every forward: weight decay then starts
        # from 1 at each step, as in MXNet.
        with torch.no_grad():
            gamma.fill_(1.0)
        gamma = gamma * 0.0 + 1.0
    channels_last = axis not in (1, 1 - x.dim())
    if channels_last:
        x = x.movedim(axis, 1)
    if training and not use_global_stats and update_stats:
        n = x.numel() // x.shape[1] if x.shape[1] else 0
        # n == 1: F.batch_norm refuses one value per channel in training, as before.
        scale = n / (n - 1) if n > 1 else 1.0
        with torch.no_grad():
            var = moving_var * scale
        out = F.batch_norm(
            x, moving_mean, var, gamma, beta, True, 1.0 - _float32(momentum), eps
        )
        with torch.no_grad():
            torch.div(var, scale, out=moving_var)
    elif training and not use_global_stats:
        out = F.batch_norm(x, None, None, gamma, beta, True, 0.0, eps)
    else:
        out = F.batch_norm(x, moving_mean, moving_var, gamma, beta, False, 0.0, eps)
    return out.movedim(1, axis) if channels_last else out


# MXNet's momentum is a float32 parameter: 1 - 0.9 weighs the batch as 0.1000000238.  Rounded
# once per value, not per call.
_FLOAT32: "dict[float, float]" = {}


def _float32(value):
    rounded = _FLOAT32.get(value)
    if rounded is None:
        rounded = _FLOAT32[value] = struct.unpack("f", struct.pack("f", value))[0]
    return rounded


def layer_norm(x, gamma, beta, axis, eps):
    if axis in (-1, x.dim() - 1):
        return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
    return F.layer_norm(
        x.movedim(axis, -1), (x.shape[axis],), gamma, beta, eps
    ).movedim(-1, axis)


def l2_normalization(x, mode, eps):
    """MXNet's ``L2Normalization``: x / sqrt(sum(x**2) + eps) over every axis but the first
    ('instance'), over axis 1 ('channel') or over the axes after 1 ('spatial')."""
    if mode == "instance":
        dims = list(range(1, x.dim()))
    elif mode == "channel":
        dims = [1]
    else:
        dims = list(range(2, x.dim()))
    return x / torch.sqrt(x.square().sum(dims, keepdim=True) + eps)


def activation(x, act_type):
    if act_type == "relu":
        return F.relu(x)
    if act_type == "sigmoid":
        return torch.sigmoid(x)
    if act_type == "tanh":
        return torch.tanh(x)
    if act_type == "softrelu":
        return F.softplus(x)
    if act_type == "softsign":
        return F.softsign(x)
    raise ValueError(f"Activation act_type={act_type!r}")


def leaky_relu(x, gamma, act_type, slope):
    if act_type == "leaky":
        return F.leaky_relu(x, slope)
    if act_type == "prelu":
        # gamma has one value per channel (axis 1), or one for all.
        shape = [1, -1] + [1] * (x.dim() - 2) if gamma.numel() > 1 else [1]
        g = gamma.reshape(shape)
        return torch.where(x >= 0, x, x * g)
    if act_type == "elu":
        return F.elu(x, slope)
    if act_type == "selu":
        return F.selu(x)
    if act_type == "gelu":
        return F.gelu(x)
    raise ValueError(f"LeakyReLU act_type={act_type!r}")
