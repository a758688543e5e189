"""MXNet's resizing operators: ``AdaptiveAvgPooling2D`` (its bins computed in float32),
``BilinearResize2D`` (its output sizes, its source positions in float32, a single output row
taken from the first input row) and ``UpSampling`` (nearest with several inputs, bilinear as
a grouped deconvolution)."""

import functools
import math
import struct

import torch
import torch.nn.functional as F


def _f32(value):
    # ``value`` rounded to float32, as MXNet's C++ computes these in ``float``.
    return struct.unpack("f", struct.pack("f", value))[0]


@functools.lru_cache(maxsize=256)
def _mxnet_bins(size, out):
    # [(start, end)] of each output position: floor(i * size / out), ceil((i + 1) * size
    # / out), the products and the quotients in float32 as MXNet computes them.
    return [
        (
            math.floor(_f32(_f32(i * size) / out)),
            math.ceil(_f32(_f32((i + 1) * size) / out)),
        )
        for i in range(out)
    ]


@functools.lru_cache(maxsize=256)
def _torch_bins(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _bin_matrix(bins, size, like):
    # The averaging matrix (out, size): 1/k over each bin of k elements.
    m = torch.zeros((len(bins), size), dtype=like.dtype, device=like.device)
    for i, (start, end) in enumerate(bins):
        m[i, start:end] = 1.0 / (end - start)
    return m


def _half_average(x, bins_h, bins_w):
    # MXNet sums a float16 window in float16, row by row, then divides by its width and
    # its height: each step rounded to float16, as here.
    def offsets(bins):
        start = torch.tensor([b[0] for b in bins], device=x.device)
        size = torch.tensor([b[1] - b[0] for b in bins], device=x.device)
        return start, size

    start_h, k_h = offsets(bins_h)
    start_w, k_w = offsets(bins_w)
    total = x.new_zeros(x.shape[:2] + (len(bins_h), len(bins_w)))
    for dh in range(int(k_h.max())):
        rows = x.index_select(2, (start_h + dh).clamp(max=x.shape[2] - 1))
        for dw in range(int(k_w.max())):
            value = rows.index_select(3, (start_w + dw).clamp(max=x.shape[3] - 1))
            inside = (dh < k_h).unsqueeze(1) & (dw < k_w)
            total = torch.where(inside, total + value, total)
    return total / k_w.to(x.dtype) / k_h.to(x.dtype).unsqueeze(1)


def adaptive_avg_pool2d(x, output_size):
    """MXNet's ``AdaptiveAvgPooling2D``: output position i averages input rows
    floor(i * H / h) .. ceil((i + 1) * H / h), computed in float32.  These are
    ``F.adaptive_avg_pool2d``'s bins except where the products pass float32's integers
    (2**24); there the average is taken over MXNet's bins.  A float16 window is summed in
    float16, as MXNet sums it."""
    out_h, out_w = output_size
    size_h, size_w = x.shape[2], x.shape[3]
    bins_h, bins_w = _mxnet_bins(size_h, out_h), _mxnet_bins(size_w, out_w)
    if x.dtype == torch.float16:
        return _half_average(x, bins_h, bins_w)
    if bins_h == _torch_bins(size_h, out_h) and bins_w == _torch_bins(size_w, out_w):
        return F.adaptive_avg_pool2d(x, (out_h, out_w))
    rows = _bin_matrix(bins_h, size_h, x)
    cols = _bin_matrix(bins_w, size_w, x)
    return torch.matmul(torch.matmul(rows, x), cols.t())


def resize_shape(
    size, height, width, scale_height=None, scale_width=None, mode="size", like=None
):
    """The (height, width) of MXNet's ``BilinearResize2D`` for an input (H, W): ``size``:
    ``height``/``width``, or ``int(scale * H)`` (float32) where ``scale_height`` is given
    (MXNet reads ``scale_width`` only then); ``odd_scale``: ``(H - 1) * scale + 1`` where H is
    odd; ``like``: the second input's; ``to_even_down`` etc.: the nearest even/odd size."""
    h, w = size
    if mode == "size":
        if scale_height is None:
            return height, width
        return (
            int(_f32(_f32(scale_height) * h)),
            int(_f32(_f32(scale_width) * w)),
        )
    if mode == "odd_scale":

        def odd(n, scale):
            if n % 2 == 0:
                return int(_f32(_f32(scale) * n))
            return int(_f32(_f32(scale) * (n - 1))) + 1

        return odd(h, scale_height), odd(w, scale_width)
    if mode == "like":
        return like.shape[2], like.shape[3]
    even = mode.startswith("to_even")
    step = -1 if mode.endswith("down") else 1
    return tuple(n if (n % 2 == 0) == even else n + step for n in (h, w))


def _source(size, out, align_corners, device):
    # MXNet's source row of each output row: the lower neighbour, the step to the upper one
    # (0 at the last row) and the upper neighbour's weight, in float32.
    if out > 1:
        scale = _f32((size - 1) / (out - 1)) if align_corners else _f32(size / out)
    else:
        scale = 0.0
    dst = torch.arange(out, dtype=torch.float64, device=device)
    if align_corners:
        src = (scale * dst).to(torch.float32)
    else:
        src = (scale * (dst + 0.5) - 0.5).to(torch.float32).clamp(min=0)
    low = src.to(torch.int64)
    step = (low < size - 1).to(torch.int64)
    return low, low + step, src - low.to(torch.float32)


def bilinear_resize2d(
    x,
    like=None,
    height=1,
    width=1,
    scale_height=None,
    scale_width=None,
    mode="size",
    align_corners=True,
):
    """MXNet's ``BilinearResize2D`` (``align_corners`` True by default).  Its source
    positions are PyTorch's ``F.interpolate(mode='bilinear')``'s, except that one output
    row (or column) without ``align_corners`` reads the first input row, not the middle."""
    size = (x.shape[2], x.shape[3])
    out_h, out_w = resize_shape(
        size, height, width, scale_height, scale_width, mode, like
    )
    if (out_h, out_w) == size:
        return x.clone()
    top, bottom, dy = _source(size[0], out_h, align_corners, x.device)
    left, right, dx = _source(size[1], out_w, align_corners, x.device)
    dy, dx = dy.to(x.dtype).unsqueeze(1), dx.to(x.dtype)
    wy, wx = 1 - dy, 1 - dx
    upper, lower = x.index_select(2, top), x.index_select(2, bottom)
    upper = wx * upper.index_select(3, left) + dx * upper.index_select(3, right)
    lower = wx * lower.index_select(3, left) + dx * lower.index_select(3, right)
    return wy * upper + dy * lower


def upsampling_nearest(inputs, scale, multi_input_mode="concat"):
    """MXNet's ``UpSampling(sample_type='nearest')``: each input repeated to the first's
    height times ``scale`` (each by ``out_h // h``, on both axes), then concatenated along
    the channels or summed."""
    out_h = inputs[0].shape[2] * scale
    parts = [
        F.interpolate(x, scale_factor=out_h // x.shape[2], mode="nearest")
        for x in inputs
    ]
    if multi_input_mode == "concat":
        return torch.cat(parts, 1) if len(parts) > 1 else parts[0]
    out = parts[0]
    for part in parts[1:]:
        out = out + part
    return out


def upsampling_bilinear(x, weight, scale, num_filter):
    """MXNet's ``UpSampling(sample_type='bilinear')``: a deconvolution of each channel by
    its own (2s - s % 2)-square kernel ``weight``, stride s, padding ceil((s - 1) / 2)."""
    pad = math.ceil((scale - 1) / 2)
    return F.conv_transpose2d(x, weight, stride=scale, padding=pad, groups=num_filter)
