"""MXNet's sequence operators (``SequenceMask``, ``SequenceLast``, ``SequenceReverse``),
softmax over the first ``length`` entries, and variational dropout.

MXNet takes a sequence's length as the integer part of the value given (any type: float32
lengths are the usual), truncated towards zero.  A length outside ``[0, steps]`` reads or
writes outside the array in MXNet (no error); here it is clamped to ``[0, steps]``.
"""

import torch


def _lengths(lengths, steps):
    """Lengths as int64 in ``[0, steps]``, truncated towards zero as MXNet's cast does."""
    return lengths.detach().to(torch.int64).clamp(0, steps)


def _within(lengths, steps, axis, batch_axis, ndim):
    """A boolean mask, True where the position along ``axis`` is below the length of its
    sequence along ``batch_axis``, shaped to broadcast against an ``ndim``-array."""
    positions = torch.arange(steps, device=lengths.device)
    shape = [1] * ndim
    shape[axis] = steps
    positions = positions.reshape(shape)
    shape = [1] * ndim
    shape[batch_axis] = -1
    return positions < lengths.reshape(shape)


def sequence_mask(x, lengths=None, value=0.0, axis=0):
    """MXNet's ``SequenceMask``: the steps at and after each sequence's length (along
    ``axis``, 0 or 1; the batch is the other of the first two axes) set to ``value``; their
    gradient is 0.  Without ``lengths``, ``x`` as it is."""
    if lengths is None:
        return x
    steps = x.shape[axis]
    keep = _within(_lengths(lengths, steps), steps, axis, 1 - axis, x.dim())
    return torch.where(keep, x, torch.full((), value, dtype=x.dtype, device=x.device))


def sequence_last(x, lengths=None, axis=0):
    """MXNet's ``SequenceLast``: each sequence's last step (``lengths - 1`` along ``axis``,
    0 or 1; the last step of all without ``lengths``), shape ``x``'s without ``axis``; the
    gradient goes to the step taken.  A length of 0 (MXNet reads outside the sequence) takes
    the last step of all."""
    if lengths is None:
        return x.select(axis, -1)
    steps = x.shape[axis]
    last = _lengths(lengths, steps) - 1
    last = torch.where(last < 0, last + steps, last)
    if axis == 1:
        x = x.transpose(0, 1)
    batch = torch.arange(x.shape[1], device=x.device)
    return x[last, batch]


def sequence_reverse(x, lengths=None, axis=0):
    """MXNet's ``SequenceReverse`` (``axis`` 0: steps first): each sequence's first
    ``length`` steps in reverse order, the steps after them where they are."""
    steps = x.shape[axis]
    if lengths is None:
        return x.flip(axis)
    count = _lengths(lengths, steps).reshape(1, -1)
    positions = torch.arange(steps, device=x.device).reshape(-1, 1)
    source = torch.where(positions < count, count - 1 - positions, positions)
    source = source.reshape(source.shape + (1,) * (x.dim() - 2))
    return x.gather(0, source.expand(x.shape))


def softmax(x, axis=-1, temperature=None, lengths=None, dtype=None, log=False):
    """MXNet's ``softmax``/``log_softmax``: of ``x / temperature``, in ``dtype`` where it is
    given; with ``lengths`` (one per position of the other axes, as an array of ``x``'s
    shape without ``axis``), only the first ``length`` entries along ``axis`` take part and
    the rest come out 0 (in ``log_softmax`` too), with a gradient of 0."""
    if dtype is not None:
        x = x.to(dtype)
    if temperature is not None and temperature != 1.0:
        x = x / temperature
    if lengths is None:
        return torch.log_softmax(x, axis) if log else torch.softmax(x, axis)
    axis = axis % x.dim()
    steps = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = 1
    count = _lengths(lengths, steps).reshape(shape)
    positions = torch.arange(steps, device=x.device).reshape(
        [steps if i == axis else 1 for i in range(x.dim())]
    )
    keep = positions < count
    # A finite fill: a row with no entry gives no NaN, to its output nor to its gradient.
    low = torch.finfo(x.dtype).min
    masked = x.masked_fill(~keep, low)
    out = torch.log_softmax(masked, axis) if log else torch.softmax(masked, axis)
    return torch.where(keep, out, torch.zeros((), dtype=out.dtype, device=out.device))


def dropout(x, p, axes=(), training=True):
    """MXNet's ``Dropout``: in training, each value kept with probability ``1 - p`` and
    scaled by ``1 / (1 - p)``; with ``axes``, one draw shared along those axes (variational
    dropout: the same units dropped at every step).  ``x`` itself out of training."""
    if not training or p == 0:
        return x
    shape = [1 if i in axes else size for i, size in enumerate(x.shape)]
    keep = 1.0 - p
    mask = torch.empty(shape, dtype=x.dtype, device=x.device).bernoulli_(keep)
    return x * (mask / keep)
