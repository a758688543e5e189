"""MXNet's loss heads: ``SoftmaxOutput`` and the ``*RegressionOutput`` operators, whose
backward is MXNet's gradient, not autograd's."""

import torch


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
        grad_scale, use_ignore, ignore_label, normalization, out_grad, smooth_alpha = (
            ctx.spec
        )
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
