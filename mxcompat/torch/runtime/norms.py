"""MXNet's normalisations beside ``BatchNorm``: ``GroupNorm`` (a scale and shift per
*group*), ``LayerNorm`` with its moments as outputs."""

import torch


def group_norm(x, gamma, beta, num_groups, eps=1e-5, output_mean_var=False):
    """MXNet's ``GroupNorm``: the channels (axis 1) split into ``num_groups`` groups, each
    sample's group normalised by its mean and biased variance, then scaled and shifted by
    ``gamma``/``beta`` of shape ``(num_groups,)`` (one value per group, not per channel as
    PyTorch's).  With ``output_mean_var``, also the mean and ``sqrt(var + eps)``, each of
    shape ``(batch, num_groups)``."""
    batch = x.shape[0]
    groups = x.reshape(batch, num_groups, -1)
    mean = groups.mean(-1, keepdim=True)
    centered = groups - mean
    std = torch.sqrt(centered.square().mean(-1, keepdim=True) + eps)
    out = centered / std * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    out = out.reshape(x.shape)
    if output_mean_var:
        return out, mean.squeeze(-1), std.squeeze(-1)
    return out


def layer_norm_moments(x, gamma, beta, axis=-1, eps=1e-5):
    """MXNet's ``LayerNorm`` with ``output_mean_var``: the normalised ``x``, its mean and
    ``sqrt(var + eps)`` along ``axis`` (that axis kept, of size 1)."""
    mean = x.mean(axis, keepdim=True)
    centered = x - mean
    std = torch.sqrt(centered.square().mean(axis, keepdim=True) + eps)
    shape = [1] * x.dim()
    shape[axis] = -1
    out = centered / std * gamma.reshape(shape) + beta.reshape(shape)
    return out, mean, std
