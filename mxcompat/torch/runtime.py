"""MXNet's operators in PyTorch, with MXNet's semantics: what a converted model's code calls.

The code ``to_torch`` generates calls these as ``mxops.<name>`` where MXNet and PyTorch
differ (pooling conventions, BatchNorm's defaults and statistics, the loss heads' gradients,
``reshape``'s special codes, the fused ``RNN`` operator's packed parameters); where they agree
it calls ``torch``/``torch.nn.functional`` directly.  This module imports torch only (never
mxnet, nor the rest of mxcompat): ``mxcompat torch`` copies it beside the ``model.py`` it
writes, so a converted model runs where neither is installed.
"""

import math
import struct

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "BatchNorm",
    "Embedding",
    "activation",
    "batch_norm",
    "flatten",
    "layer_norm",
    "leaky_relu",
    "l2_normalization",
    "pooling",
    "regression_output",
    "reshape",
    "rnn",
    "softmax_output",
    "split",
    "reduce",
    "slice_axis",
    "unknown_zeros",
    "where",
]


# --- layers ---------------------------------------------------------------------------------------


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
        text = "%d, eps=%r, momentum=%r" % (self.num_features, self.eps, self.momentum)
        for key, default in (
            ("fix_gamma", False),
            ("use_global_stats", False),
            ("axis", 1),
            ("update_stats", True),
        ):
            if getattr(self, key) != default:
                text += ", %s=%r" % (key, getattr(self, key))
        return text


class Embedding(nn.Embedding):
    """MXNet's ``Embedding``: its indices may come in any type (MXNet feeds float32)."""

    def forward(self, x):
        return super().forward(x.long())


def flatten(x):
    """MXNet's ``Flatten``: (d1, d2*...*dk); a 1-d input becomes (d1, 1)."""
    return x.reshape(x.shape[0], -1)


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

    ``fix_gamma``: the stored gamma is ignored (taken as 1) and its gradient is 0 (a gradient,
    not None: MXNet's optimizer still applies weight decay to it).  ``momentum`` weighs the
    *old* statistic (PyTorch's is 1 - that).  In training (unless ``use_global_stats``) the
    batch's biased variance normalises and is what the running variance moves towards;
    ``update_stats=False`` (statistics frozen in MXNet) leaves them.  MXNet moves the
    statistics in the backward of a training step, this in the training forward (as PyTorch
    does): the same after each step.

    One statistics pass: ``F.batch_norm`` (PyTorch's fused kernel, cuDNN's on a GPU) both
    normalises and moves the statistics.  It moves the running variance towards the
    *unbiased* variance, n/(n-1) times the biased one (n values per channel), so it is handed
    the running variance scaled by n/(n-1) and the result is scaled back: (1-m)*v*s +
    m*var*s, divided by s, is MXNet's (1-m)*v + m*var.  The scaled copy is a new tensor (the
    kernel keeps it for its backward), so the buffer itself is written only after."""
    if fix_gamma:
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
        out = F.batch_norm(x, moving_mean, var, gamma, beta, True, 1.0 - _float32(momentum), eps)
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
    return F.layer_norm(x.movedim(axis, -1), (x.shape[axis],), gamma, beta, eps).movedim(-1, axis)


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
    raise ValueError("Activation act_type=%r" % act_type)


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
    raise ValueError("LeakyReLU act_type=%r" % act_type)


def _pool_sum(x, kernel, stride):
    # A sum over windows (no padding: the caller pads), in 1-3 spatial dimensions.
    n = x.dim() - 2
    if n == 1:
        return F.avg_pool2d(x.unsqueeze(-1), kernel + (1,), stride + (1,), divisor_override=1)[
            ..., 0
        ]
    pool = F.avg_pool2d if n == 2 else F.avg_pool3d
    return pool(x, kernel, stride, divisor_override=1)


def pooling(x, kernel, pool_type, stride, pad, convention, global_pool, count_include_pad):
    """MXNet's ``Pooling``.  ``convention='full'`` rounds the output size up
    (``ceil((x + 2p - k) / s) + 1``), and its last window may reach past the padding: MXNet
    averages over the part inside the (padded) input only."""
    n = x.dim() - 2
    if global_pool:
        dims = tuple(range(2, x.dim()))
        if pool_type == "max":
            return x.amax(dims, keepdim=True)
        if pool_type == "avg":
            return x.mean(dims, keepdim=True)
        return x.sum(dims, keepdim=True)
    kernel, stride, pad = tuple(kernel), tuple(stride or (1,) * n), tuple(pad or (0,) * n)
    if convention == "valid" and pool_type == "max":
        return [F.max_pool1d, F.max_pool2d, F.max_pool3d][n - 1](x, kernel, stride, pad)
    if convention == "valid" and pool_type == "avg" and count_include_pad:
        return [F.avg_pool1d, F.avg_pool2d, F.avg_pool3d][n - 1](x, kernel, stride, pad)
    # The general case, as MXNet defines it: pad, pool, divide by the window's elements.
    sizes = x.shape[2:]
    extra = []
    for size, k, s, p in zip(sizes, kernel, stride, pad):
        span = size + 2 * p - k
        out = (-(-span // s) if convention == "full" else span // s) + 1
        extra.append(max((out - 1) * s + k - (size + 2 * p), 0))
    spec = []
    for p, e in zip(reversed(pad), reversed(extra)):
        spec += [p, p + e]
    fill = -math.inf if pool_type == "max" else 0.0
    padded = F.pad(x, spec, value=fill)
    if pool_type == "max":
        pool = [F.max_pool1d, F.max_pool2d, F.max_pool3d][n - 1]
        return pool(padded, kernel, stride)
    total = _pool_sum(padded, kernel, stride)
    if pool_type == "sum":
        return total
    # The divisor: the padding counts if count_include_pad, the overhang never.
    ones = torch.ones((1, 1) + tuple(sizes), dtype=x.dtype, device=x.device)
    if count_include_pad:
        ones = F.pad(ones, [q for p in reversed(pad) for q in (p, p)], value=1.0)
        spec = []
        for e in reversed(extra):
            spec += [0, e]
        mask = F.pad(ones, spec, value=0.0)
    else:
        mask = F.pad(ones, spec, value=0.0)
    return total / _pool_sum(mask, kernel, stride)


# --- shapes ---------------------------------------------------------------------------------------


def reshape(x, shape, reverse=False):
    """MXNet's ``reshape`` with its special codes: 0 copies an input dimension, -1 infers one,
    -2 copies the rest, -3 merges two, -4 splits one into the next two codes (one may be -1);
    ``reverse`` reads both shapes from the right."""
    src = list(x.shape)
    codes = list(shape)
    if reverse:
        src, codes = src[::-1], codes[::-1]
    out, i, j, infer = [], 0, 0, None
    while j < len(codes):
        c = codes[j]
        if c == 0:
            out.append(src[i])
            i += 1
        elif c == -1:
            infer = len(out)
            out.append(-1)
            i += 1
        elif c == -2:
            out.extend(src[i:])
            i = len(src)
        elif c == -3:
            out.append(src[i] * src[i + 1])
            i += 2
        elif c == -4:
            a, b = codes[j + 1], codes[j + 2]
            if reverse:
                a, b = b, a
            if a == -1:
                a = src[i] // b
            if b == -1:
                b = src[i] // a
            pair = [b, a] if reverse else [a, b]
            out.extend(pair)
            i += 1
            j += 2
        else:
            out.append(c)
            i += 1
        j += 1
    if infer is not None:
        known = 1
        for k, d in enumerate(out):
            if k != infer:
                known *= d
        out[infer] = x.numel() // known if known else 0
    if reverse:
        out = out[::-1]
    return x.reshape(out)


def split(x, num_outputs, axis, squeeze_axis):
    """MXNet's ``SliceChannel``/``split``: equal parts along ``axis``."""
    parts = torch.chunk(x, num_outputs, axis)
    if squeeze_axis:
        parts = tuple(p.squeeze(axis) for p in parts)
    return list(parts)


class _UnknownZeros:
    """A zeros array whose shape has a 0 (MXNet infers it from the consumer): Gluon's RNN
    layers begin with one, as a state of batch size 0; ``rnn`` fills in the batch size."""

    def __init__(self, shape):
        self.shape = tuple(shape)


def unknown_zeros(shape):
    return _UnknownZeros(shape)


# --- loss heads -----------------------------------------------------------------------------------


class _SoftmaxOutput(torch.autograd.Function):
    # Forward: the softmax.  Backward: MXNet's gradient (not autograd's), which ignores the
    # gradient that comes in (unless out_grad): (softmax - label) * grad_scale / normaliser.
    @staticmethod
    def forward(ctx, x, label, axis, flat, spec):
        shape = x.shape
        y = x.reshape(shape[0], -1) if flat else x
        out = torch.softmax(y, axis).reshape(shape)
        ctx.save_for_backward(out, label)
        ctx.axis, ctx.spec = axis, spec
        return out

    @staticmethod
    def backward(ctx, grad):
        out, label = ctx.saved_tensors
        grad_scale, use_ignore, ignore_label, normalization, out_grad, smooth_alpha = ctx.spec
        axis = ctx.axis if ctx.axis >= 0 else out.dim() + ctx.axis
        if label.shape == out.shape:
            # Probability labels: no ignore, no normalization (MXNet's own rule).
            g = (out - label) * grad_scale
        else:
            probs = out if axis == out.dim() - 1 else out.movedim(axis, -1)
            flat = probs.reshape(-1, probs.shape[-1])
            index = label.reshape(-1).long()
            k = flat.shape[-1]
            target = torch.zeros_like(flat)
            valid = torch.ones(index.shape, dtype=out.dtype, device=out.device)
            keep = index
            if use_ignore:
                valid = (label.reshape(-1) != ignore_label).to(out.dtype)
                keep = torch.where(valid > 0, index, torch.zeros_like(index))
            if smooth_alpha:
                target += smooth_alpha / (k - 1)
                target.scatter_(1, keep.unsqueeze(1), 1.0 - smooth_alpha)
            else:
                target.scatter_(1, keep.unsqueeze(1), 1.0)
            g = (flat - target) * valid.unsqueeze(1)
            # multi_output (labels per position): MXNet's 'null' divides by the positions per
            # example, 'batch' by every position of the batch (measured on 1.5 and 1.9).
            positions = label.numel() // out.shape[0] if out.dim() > 2 else 1
            if normalization == "batch":
                g = g / (out.shape[0] * positions)
            elif normalization == "valid":
                g = g / valid.sum().clamp(min=1.0)  # a tensor: no sync with the device
            elif positions > 1:
                g = g / positions
            g = (g * grad_scale).reshape(probs.shape)
            if axis != out.dim() - 1:
                g = g.movedim(-1, axis)
        if out_grad:
            g = g * grad
        return g, None, None, None, None


def softmax_output(
    x,
    label,
    multi_output=False,
    preserve_shape=False,
    grad_scale=1.0,
    use_ignore=False,
    ignore_label=-1.0,
    normalization="null",
    out_grad=False,
    smooth_alpha=0.0,
):
    """MXNet's ``SoftmaxOutput``: the softmax over axis 1 of the input seen as (d1, rest)
    (``multi_output``: axis 1 of the input as it is; ``preserve_shape``: the last axis).
    Without a label it is the softmax; with one, its backward is MXNet's loss gradient (call
    ``backward`` on the output with any gradient: it is ignored, as MXNet ignores it)."""
    if multi_output:
        axis, flat = 1, False
    elif preserve_shape:
        axis, flat = -1, False
    else:
        axis, flat = 1, True
    if label is None:
        y = x.reshape(x.shape[0], -1) if flat else x
        return torch.softmax(y, axis).reshape(x.shape)
    spec = (grad_scale, use_ignore, ignore_label, normalization, out_grad, smooth_alpha)
    return _SoftmaxOutput.apply(x, label.to(x.dtype), axis, flat, spec)


class _RegressionOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, label, kind, grad_scale):
        out = torch.sigmoid(x) if kind == "logistic" else x.clone()
        ctx.save_for_backward(out, label)
        ctx.kind, ctx.grad_scale = kind, grad_scale
        return out

    @staticmethod
    def backward(ctx, grad):
        out, label = ctx.saved_tensors
        label = label.reshape(out.shape)
        diff = out - label
        if ctx.kind == "mae":
            diff = torch.sign(diff)
        # MXNet scales by grad_scale / (the number of outputs per example).
        per_example = out.numel() // out.shape[0] if out.dim() else 1
        return diff * (ctx.grad_scale / per_example), None, None, None


def regression_output(x, label, kind, grad_scale=1.0):
    """MXNet's ``LinearRegressionOutput`` / ``LogisticRegressionOutput`` /
    ``MAERegressionOutput``: identity (sigmoid) forward; MXNet's gradient backward."""
    if label is None:
        return torch.sigmoid(x) if kind == "logistic" else x
    return _RegressionOutput.apply(x, label.to(x.dtype), kind, grad_scale)


# --- the fused RNN operator -----------------------------------------------------------------------

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
# PyTorch's fused kernels (cuDNN on a GPU, the native ones on a CPU) compute what MXNet's RNN
# operator computes: LSTM gates i, f, g, o; GRU r, z, n with the hidden bias of n inside the
# reset gate, r * (W_hn h + b_hn); dropout on every layer's output but the last.  They differ
# in where the weights lie only.
_KERNELS = {
    "lstm": torch.lstm,
    "gru": torch.gru,
    "rnn_tanh": torch.rnn_tanh,
    "rnn_relu": torch.rnn_relu,
}
_PLANS: dict = {}  # layout -> (segment sizes, [(segment, shape)] in PyTorch's order)


def _plan(mode, input_size, state_size, num_layers, bidirectional):
    """MXNet's flat layout, worked out once per layout: every weight first (layer by layer,
    direction by direction, input-to-hidden then hidden-to-hidden), then every bias in the
    same order; as segment sizes and, in PyTorch's order (w_ih, w_hh, b_ih, b_hh per layer
    and direction), which segment each weight is and its shape."""
    key = (mode, input_size, state_size, num_layers, bidirectional)
    plan = _PLANS.get(key)
    if plan is None:
        gates = _GATES[mode] * state_size
        dirs = 2 if bidirectional else 1
        sizes, shapes = [], []
        for layer in range(num_layers):
            size = input_size if layer == 0 else state_size * dirs
            for _ in range(dirs):
                sizes += [gates * size, gates * state_size]
                shapes += [(gates, size), (gates, state_size)]
        n = len(sizes)
        sizes += [gates] * n
        order = []
        for k in range(0, n, 2):
            order += [
                (k, shapes[k]),
                (k + 1, shapes[k + 1]),
                (n + k, (gates,)),
                (n + k + 1, (gates,)),
            ]
        plan = _PLANS[key] = (sizes, order)
    return plan


def _layout_error(count, plan, mode, num_layers, state_size, input_size):
    return ValueError(
        "RNN: %d parameters, the layout needs %d (mode %s, %d layer(s), state_size %d, "
        "input size %d)" % (count, sum(plan[0]), mode, num_layers, state_size, input_size)
    )


def rnn_unpack(params, mode, input_size, state_size, num_layers, bidirectional):
    """The fused ``RNN`` operator's parameters as PyTorch's flat weight list (``w_ih, w_hh,
    b_ih, b_hh`` per layer and direction, the order of ``torch.nn.LSTM``'s
    ``_flat_weights``): views of MXNet's one flat vector, or, given the list of pieces MXNet
    concatenates into it (a Gluon layer's own parameters, weights first), those pieces."""
    plan = _plan(mode, input_size, state_size, num_layers, bidirectional)
    sizes, order = plan
    if isinstance(params, (list, tuple)):
        if len(params) == len(sizes) and all(p.numel() == s for p, s in zip(params, sizes)):
            return [params[k] if params[k].shape == s else params[k].view(s) for k, s in order]
        params = torch.cat([p.reshape(-1) for p in params])
    if params.numel() != sum(sizes):
        raise _layout_error(params.numel(), plan, mode, num_layers, state_size, input_size)
    parts = params.split(sizes)
    return [parts[k].view(s) for k, s in order]


def _compiling():
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    return False


_SPLITS = None  # a parameter (weakly) -> (stamp, its weights): inference's views, made once


def _weights(params, mode, input_size, state_size, num_layers, bidirectional):
    global _SPLITS
    if isinstance(params, (list, tuple)) or _compiling():
        return rnn_unpack(params, mode, input_size, state_size, num_layers, bidirectional)
    if torch.is_grad_enabled() and params.requires_grad:
        # Training: views made now, in this graph.  Views kept from an earlier step would
        # still be right, but after the optimizer's in-place update autograd would take them
        # back through as_strided, a full-size copy each.
        return rnn_unpack(params, mode, input_size, state_size, num_layers, bidirectional)
    # Inference: views of the same storage serve every call until the vector is replaced
    # or written (load_state_dict, an optimizer step: its version moves).
    stamp = (
        params._version,
        params.data_ptr(),
        params.dtype,
        params.device,
        torch.is_inference_mode_enabled(),
        mode,
        input_size,
        state_size,
        num_layers,
        bidirectional,
    )
    if _SPLITS is None:
        from torch.utils.weak import WeakIdKeyDictionary

        _SPLITS = WeakIdKeyDictionary()
    cached = _SPLITS.get(params)
    if cached is None or cached[0] != stamp:
        # Views of the detached vector: they keep its storage, not the Parameter, alive.
        weights = rnn_unpack(
            params.detach(), mode, input_size, state_size, num_layers, bidirectional
        )
        cached = _SPLITS[params] = (stamp, weights)
    return cached[1]


def _cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    if mode == "lstm":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c
    if mode == "gru":
        ir, iz, in_ = gi.chunk(3, -1)
        hr, hz, hn = gh.chunk(3, -1)
        r = torch.sigmoid(ir + hr)
        z = torch.sigmoid(iz + hz)
        return (1 - z) * torch.tanh(in_ + r * hn) + z * h, None
    pre = gi + gh
    return (torch.tanh(pre) if mode == "rnn_tanh" else torch.relu(pre)), None


def _rnn_steps(data, weights, state, state_cell, mode, num_layers, dirs, p, training):
    """The same, step by step: only for what torch.compile traces on a CPU with MXNet's flat
    vector in training, where AOT autograd fails on the oneDNN kernel given views of a
    parameter (torch 2.13); a compiled graph unrolls the steps anyway."""
    x, last_h, last_c = data, [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            h, c = state[k], state_cell[k] if mode == "lstm" else None
            seq = [None] * x.shape[0]
            for t in range(x.shape[0]) if d == 0 else range(x.shape[0] - 1, -1, -1):
                h, c = _cell(mode, x[t], h, c, *weights[4 * k : 4 * k + 4])
                seq[t] = h
            outs.append(torch.stack(seq))
            last_h.append(h)
            last_c.append(c)
        x = torch.cat(outs, -1) if dirs == 2 else outs[0]
        if p and training and layer < num_layers - 1:
            x = F.dropout(x, p, True)
    return x, torch.stack(last_h), torch.stack(last_c) if mode == "lstm" else None


def rnn(
    data,
    params,
    state,
    state_cell,
    mode,
    state_size,
    num_layers,
    bidirectional=False,
    p=0.0,
    state_outputs=False,
    training=False,
):
    """MXNet's fused ``RNN`` operator: ``data`` (T, N, C), ``params`` MXNet's flat vector (or
    the pieces it is concatenated from, see ``rnn_unpack``), ``state`` (and, for LSTM,
    ``state_cell``) (layers * directions, N, state_size); the output (T, N, directions *
    state_size), with the last states if ``state_outputs``.  Dropout ``p`` between layers in
    training.  One call of PyTorch's fused kernel (``torch.lstm``/``gru``/``rnn_tanh``/
    ``rnn_relu``), which autograd differentiates back to MXNet's parameters."""
    dirs = 2 if bidirectional else 1
    # None (Gluon's begin state) or zeros of a batch size left to inference: zero states.
    if state is None or isinstance(state, _UnknownZeros):
        state = data.new_zeros(num_layers * dirs, data.shape[1], state_size)
    if mode == "lstm" and (state_cell is None or isinstance(state_cell, _UnknownZeros)):
        state_cell = data.new_zeros(num_layers * dirs, data.shape[1], state_size)
    weights = _weights(params, mode, data.shape[2], state_size, num_layers, bidirectional)
    dropout = float(p) if training else 0.0
    if (
        _compiling()
        and data.device.type == "cpu"
        and torch.is_tensor(params)
        and params.requires_grad
        and torch.is_grad_enabled()
    ):
        out, h, c = _rnn_steps(
            data, weights, state, state_cell, mode, num_layers, dirs, p, training
        )
        if not state_outputs:
            return out
        return [out, h, c] if mode == "lstm" else [out, h]
    if mode == "lstm":
        out, h, c = torch.lstm(
            data,
            (state, state_cell),
            weights,
            True,
            num_layers,
            dropout,
            training,
            bidirectional,
            False,
        )
        return [out, h, c] if state_outputs else out
    out, h = _KERNELS[mode](
        data, state, weights, True, num_layers, dropout, training, bidirectional, False
    )
    return [out, h] if state_outputs else out


# --- small ones -----------------------------------------------------------------------------------


def where(condition, x, y):
    """MXNet's ``where``: a 1-d condition picks whole rows (the first axis) of x or y."""
    if condition.dim() == 1 and x.dim() > 1:
        condition = condition.reshape((-1,) + (1,) * (x.dim() - 1))
    return torch.where(condition != 0, x, y)


def reduce(x, how, axis, keepdims, exclude):
    """MXNet's ``sum``/``mean``/``max``/``min``/``prod``: ``axis=()`` reduces everything to
    shape (1,) (not PyTorch's 0-d); ``exclude`` reduces the axes *not* listed."""
    axes = [a % x.dim() for a in axis] if axis else list(range(x.dim()))
    if exclude:
        axes = [a for a in range(x.dim()) if a not in axes]
    if how == "sum":
        out = x.sum(axes, keepdim=keepdims)
    elif how == "mean":
        out = x.mean(axes, keepdim=keepdims)
    elif how == "max":
        out = x.amax(axes, keepdim=keepdims)
    elif how == "min":
        out = x.amin(axes, keepdim=keepdims)
    else:
        out = x
        for a in sorted(axes, reverse=True):
            out = out.prod(a, keepdim=keepdims)
    return out.reshape(1) if out.dim() == 0 else out


def slice_axis(x, axis, begin, end):
    return x[(slice(None),) * (axis % x.dim()) + (slice(begin, end),)]


# torch.fx traces through the layers above and records these as calls: their Python reads the
# input's shape, which a symbolic trace does not have.
for _name in (
    "activation",
    "batch_norm",
    "flatten",
    "layer_norm",
    "leaky_relu",
    "l2_normalization",
    "pooling",
    "reduce",
    "regression_output",
    "reshape",
    "rnn",
    "slice_axis",
    "softmax_output",
    "split",
    "unknown_zeros",
    "where",
):
    torch.fx.wrap(_name)
