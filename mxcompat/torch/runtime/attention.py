"""MXNet's attention operators (``_contrib_interleaved_matmul_*``, ``_contrib_div_sqrt_dim``,
``_contrib_arange_like``).

The interleaved operators take projections laid out steps first, ``(steps, batch, width)``,
with each head's query, key and value side by side: the last axis of the self-attention
input reads as ``(heads, 3, head_dim)``, of the encoder-decoder keys and values as
``(heads, 2, head_dim)``, of the encoder-decoder queries as ``(heads, head_dim)``.  The
attention scores come out as ``(batch * heads, query steps, key steps)``, batch major.
"""

import math

import torch


def _split_heads(x, heads, parts):
    """``(steps, batch, heads * parts * d)`` as ``parts`` arrays ``(batch * heads, steps,
    d)``."""
    steps, batch, width = x.shape
    d = width // (heads * parts)
    x = x.reshape(steps, batch * heads, parts, d).permute(2, 1, 0, 3)
    return x.unbind(0)


def _merge_heads(x, heads):
    """``(batch * heads, steps, d)`` as ``(steps, batch, heads * d)``."""
    bh, steps, d = x.shape
    return (
        x.reshape(bh // heads, heads, steps, d)
        .permute(2, 0, 1, 3)
        .reshape(steps, -1, heads * d)
    )


def _scale(d):
    # MXNet scales by 1 / sqrt(head_dim) rounded to float32.
    return float(torch.tensor(1.0 / math.sqrt(float(d)), dtype=torch.float32))


def interleaved_matmul_selfatt_qk(queries_keys_values, heads):
    """Each head's scores ``q @ k.T / sqrt(head_dim)``, ``(batch * heads, steps, steps)``."""
    q, k, _ = _split_heads(queries_keys_values, heads, 3)
    return torch.matmul(q, k.transpose(1, 2)) * _scale(q.shape[-1])


def interleaved_matmul_selfatt_valatt(queries_keys_values, attention, heads):
    """The attention-weighted values, ``(steps, batch, heads * head_dim)``."""
    _, _, v = _split_heads(queries_keys_values, heads, 3)
    return _merge_heads(torch.matmul(attention, v), heads)


def interleaved_matmul_encdec_qk(queries, keys_values, heads):
    """Each head's scores ``q @ k.T / sqrt(head_dim)``, ``(batch * heads, query steps, key
    steps)``."""
    (q,) = _split_heads(queries, heads, 1)
    k, _ = _split_heads(keys_values, heads, 2)
    return torch.matmul(q, k.transpose(1, 2)) * _scale(q.shape[-1])


def interleaved_matmul_encdec_valatt(keys_values, attention, heads):
    """The attention-weighted values, ``(query steps, batch, heads * head_dim)``."""
    _, v = _split_heads(keys_values, heads, 2)
    return _merge_heads(torch.matmul(attention, v), heads)


def div_sqrt_dim(x):
    """``x`` divided by the square root of its last axis' size."""
    return x / math.sqrt(x.shape[-1])


def arange_like(x, start=0.0, step=1.0, repeat=1, axis=None):
    """MXNet's ``_contrib_arange_like``: ``start, start + step, ...``, each value ``repeat``
    times, shaped as ``x`` (row-major), or as ``x``'s ``axis`` alone, in ``x``'s type; no
    gradient flows to ``x``."""
    shape = x.shape if axis is None else (x.shape[axis],)
    count = math.prod(shape)
    index = torch.arange(count, device=x.device) // repeat
    if not x.dtype.is_floating_point:
        start, step = int(start), int(step)  # MXNet casts them to x's type
    values = index.to(x.dtype) * step + start
    return values.reshape(shape)
