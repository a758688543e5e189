"""MXNet's ``Pooling``: its ``full`` convention and its averages over the padded input."""

import math

import torch
import torch.nn.functional as F


def _pool_sum(x, kernel, stride):
    # A sum over windows (no padding: the caller pads), in 1-3 spatial dimensions.
    n = x.dim() - 2
    if n == 1:
        return F.avg_pool2d(
            x.unsqueeze(-1), kernel + (1,), stride + (1,), divisor_override=1
        )[..., 0]
    pool = F.avg_pool2d if n == 2 else F.avg_pool3d
    return pool(x, kernel, stride, divisor_override=1)


def pooling(
    x, kernel, pool_type, stride, pad, convention, global_pool, count_include_pad
):
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
    kernel, stride, pad = (
        tuple(kernel),
        tuple(stride or (1,) * n),
        tuple(pad or (0,) * n),
    )
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
