"""MXNet's shape operators with their own conventions: ``Flatten``, ``reshape``'s special
codes, ``split``, ``where`` with a 1-d condition, the reductions, ``slice_axis``; and the
zeros of a shape MXNet infers later (an RNN's begin state)."""

import torch


def flatten(x):
    """MXNet's ``Flatten``: (d1, d2*...*dk); a 1-d input becomes (d1, 1)."""
    return x.reshape(x.shape[0], -1)


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
