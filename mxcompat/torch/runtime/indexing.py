"""MXNet's indexing and sorting operators where PyTorch's namesakes differ: ``mod`` (the
divisor's sign, 0 where it divides by 0, MXNet's gradients), ``gather_nd``/``scatter_nd``
(the index tuple along the first axis), ``slice_like``, ``pick``, ``one_hot`` (indices as
floats, out-of-range ones all off), ``topk``/``sort``/``argsort`` (indices as floats, ties in
order of position) and the shape as an array."""

import torch


def _mod_values(a, b):
    # The remainder with the divisor's sign (Python's %); 0 where b is 0.
    zero = b == 0
    safe = torch.where(zero, torch.ones_like(b), b)
    r = torch.fmod(a, safe)
    r = torch.where((r != 0) & ((r < 0) != (safe < 0)), r + safe, r)
    return torch.where(zero, torch.zeros_like(r), r)


class _Mod(torch.autograd.Function):
    """MXNet's gradients of ``a mod b``: 1 for a (also where b is 0), ``-floor(a / b)`` for
    b (float16 in float32)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _mod_values(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad.expand(torch.broadcast_shapes(a.shape, b.shape))
        if a.dtype == torch.float16:
            ratio = a.float() / b.float()
            grad_b = (-torch.floor(ratio) * grad.float()).to(grad.dtype)
        else:
            grad_b = -torch.floor(a / b) * grad
        return grad_a.sum_to_size(a.shape), grad_b.sum_to_size(b.shape)


def mod(a, b):
    """MXNet's ``broadcast_mod``/``_mod``: the remainder with the divisor's sign, as Python's
    ``%`` (``torch.remainder``), except that dividing by 0 gives 0."""
    return _Mod.apply(a, b)


def mod_scalar(x, scalar, reverse=False):
    """MXNet's ``_mod_scalar`` (``x % scalar``) and ``_rmod_scalar`` (``scalar % x``,
    ``reverse``): the scalar in the array's type first (2.5 is 2 for an integer array)."""
    s = torch.tensor(scalar, dtype=torch.float64, device=x.device).to(x.dtype)
    return _Mod.apply(s, x) if reverse else _Mod.apply(x, s)


def shape_array(x):
    """MXNet's ``shape_array``: the shape as a 1-d int64 array."""
    return torch.tensor(x.shape, dtype=torch.int64, device=x.device)


def size_array(x):
    """MXNet's ``size_array``: the number of elements as an int64 array of shape (1,)."""
    return torch.tensor([x.numel()], dtype=torch.int64, device=x.device)


def slice_like(x, like, axes=()):
    """MXNet's ``slice_like``: the first ``like.shape[a]`` elements of ``x`` along each axis
    in ``axes`` (every axis of ``like`` where empty)."""
    axes = [a % x.dim() for a in axes] if axes else range(like.dim())
    index = [slice(None)] * x.dim()
    for a in axes:
        index[a] = slice(0, like.shape[a])
    return x[tuple(index)]


def gather_nd(data, indices):
    """MXNet's ``gather_nd``: ``indices`` of shape (M, ...) picks ``data[i0, ..., iM-1]``
    for each column; the result's shape is ``indices.shape[1:] + data.shape[M:]``.  A
    negative index counts from the end: MXNet adds the axis' size, then truncates."""
    m = indices.shape[0]
    sizes = torch.tensor(data.shape[:m], device=indices.device)
    sizes = sizes.reshape((m,) + (1,) * (indices.dim() - 1))
    idx = (indices + sizes.to(indices.dtype)).to(torch.int64).remainder(sizes)
    return data[tuple(idx)]


def scatter_nd(data, indices, shape):
    """MXNet's ``scatter_nd``: zeros of ``shape`` with ``data`` written at the places
    ``indices`` names (``gather_nd``'s layout, truncated to integers)."""
    out = torch.zeros(tuple(shape), dtype=data.dtype, device=data.device)
    return out.index_put(tuple(indices.to(torch.int64)), data)


def pick(data, index, axis=-1, keepdims=False, mode="clip"):
    """MXNet's ``pick``: one element along ``axis`` per position, at ``index`` (floats,
    truncated); an index out of range is clipped (``mode='clip'``) or wrapped (``'wrap'``)."""
    axis = axis % data.dim()
    n = data.shape[axis]
    idx = index.to(torch.int64)
    idx = idx.clamp(0, n - 1) if mode == "clip" else idx.remainder(n)
    if idx.dim() < data.dim():
        idx = idx.unsqueeze(axis)
    out = torch.gather(data, axis, idx)
    return out if keepdims else out.squeeze(axis)


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype=torch.float32):
    """MXNet's ``one_hot``: indices as floats (truncated); an index outside [0, depth) gives
    a row of ``off_value``."""
    idx = indices.to(torch.int64).unsqueeze(-1)
    hot = idx == torch.arange(depth, device=indices.device)
    on = torch.tensor(on_value, dtype=torch.float64, device=indices.device).to(dtype)
    off = torch.tensor(off_value, dtype=torch.float64, device=indices.device).to(dtype)
    return torch.where(hot, on, off)


def _sorted(x, axis, ascending):
    # A stable sort: equal values in order of position, as MXNet's CPU sort leaves rows of
    # up to 16 elements (its insertion sort) and its GPU sort all.
    if axis is None:
        x, axis = x.reshape(-1), 0
    values, indices = torch.sort(x, dim=axis, descending=not ascending, stable=True)
    return values, indices, axis


def topk(x, axis=-1, k=1, ret_typ="indices", is_ascend=False, dtype=torch.float32):
    """MXNet's ``topk``: the k largest (``is_ascend``: smallest) along ``axis`` (``None``:
    of the flattened array; ``k < 1``: all), as values, indices (of ``dtype``, float32 by
    default), a 0/1 mask of x's shape and type, or [values, indices] (``'both'``)."""
    values, indices, dim = _sorted(x, axis, is_ascend)
    if k < 1:
        k = values.shape[dim]
    values, indices = values.narrow(dim, 0, k), indices.narrow(dim, 0, k)
    if ret_typ == "value":
        return values
    if ret_typ == "mask":
        zeros = torch.zeros_like(x) if axis is not None else x.new_zeros(x.numel())
        return zeros.scatter(dim, indices, 1).reshape(x.shape)
    if ret_typ == "both":
        return [values, indices.to(dtype)]
    return indices.to(dtype)


def sort(x, axis=-1, is_ascend=True):
    """MXNet's ``sort`` (``axis=None``: the flattened array)."""
    return _sorted(x, axis, is_ascend)[0]


def argsort(x, axis=-1, is_ascend=True, dtype=torch.float32):
    """MXNet's ``argsort``: the sorting positions as ``dtype`` (float32 by default)."""
    return _sorted(x, axis, is_ascend)[1].to(dtype)
