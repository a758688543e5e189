"""MXNet's region-of-interest operators: ``ROIAlign`` and ``ROIPooling``."""

import torch

from .boxes import as_float32

_FLOAT32_LOWEST = -3.4028234663852886e38  # MXNet's ROIPooling starts each bin from it


def _round_half_away(x):
    """C's ``round``: halves away from zero (``torch.round`` rounds them to even)."""
    whole = torch.trunc(x)
    return whole + torch.where(
        (x - whole).abs() >= 0.5, torch.sign(x), torch.zeros_like(x)
    )


def _bilinear_corners(y, x, height, width):
    """MXNet's ROIAlign sampling: the four neighbours (row, column) of each point and their
    weights; the weights 0 where the point lies outside [-1, size]."""
    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y, x = y.clamp(min=0), x.clamp(min=0)
    y_low, x_low = y.to(torch.int64), x.to(torch.int64)
    y_last, x_last = y_low >= height - 1, x_low >= width - 1
    y_low = torch.where(y_last, torch.full_like(y_low, height - 1), y_low)
    x_low = torch.where(x_last, torch.full_like(x_low, width - 1), x_low)
    y = torch.where(y_last, y_low.to(y.dtype), y)
    x = torch.where(x_last, x_low.to(x.dtype), x)
    y_high = torch.where(y_last, y_low, y_low + 1)
    x_high = torch.where(x_last, x_low, x_low + 1)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    weights = [hy * hx, hy * lx, ly * hx, ly * lx]
    weights = [torch.where(outside, torch.zeros_like(w), w) for w in weights]
    rows = [y_low, y_low, y_high, y_high]
    columns = [x_low, x_high, x_low, x_high]
    return list(zip(rows, columns, weights))


def roi_align(
    data,
    rois,
    pooled_size,
    spatial_scale,
    sample_ratio=-1,
    position_sensitive=False,
    aligned=False,
):
    """MXNet's ``ROIAlign`` of (n, c, h, w) ``data`` over (r, 5) ``rois`` [batch index, x1,
    y1, x2, y2]: each bin the mean of a grid of bilinear samples (``sample_ratio`` a side,
    else ``ceil`` of the bin's size), sampled in order and summed as MXNet sums them.
    ``aligned`` shifts the rois by half a pixel (else each is at least 1x1);
    ``position_sensitive`` reads bin (i, j) of output channel k from input channel
    ``(k * ph + i) * pw + j``.  A roi whose batch index is < 0 gives zeros.  The gradient
    reaches ``data`` (MXNet's is zero for ``rois``)."""
    ph, pw = pooled_size
    _, channels, height, width = data.shape
    rois = rois.detach()
    scale = as_float32(spatial_scale)
    batch = rois[:, 0].to(torch.int64)
    offset = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = (rois[:, k] * scale - offset for k in range(1, 5))
    roi_w, roi_h = x2 - x1, y2 - y1
    if aligned:
        if rois.shape[0] and not bool(((roi_w > 0) & (roi_h > 0)).all()):
            raise ValueError("ROIAlign(aligned=True): a roi of width or height <= 0")
    else:
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    bin_h, bin_w = roi_h / ph, roi_w / pw
    if sample_ratio > 0:
        grid_h = torch.full_like(batch, sample_ratio)
        grid_w = torch.full_like(batch, sample_ratio)
    else:
        grid_h, grid_w = torch.ceil(roi_h / ph).long(), torch.ceil(roi_w / pw).long()
    most_h = int(grid_h.max()) if rois.shape[0] else 1
    most_w = int(grid_w.max()) if rois.shape[0] else 1
    dtype, device = data.dtype, data.device

    def points(start, size, bins, grid, most):
        # (r, bins, most) sample positions along one axis; (r, 1, most) which the roi has.
        i = torch.arange(bins, device=device, dtype=dtype).view(1, -1, 1)
        k = torch.arange(most, device=device).view(1, 1, -1)
        g = grid.view(-1, 1, 1)
        size = size.view(-1, 1, 1)
        at = start.view(-1, 1, 1) + i * size + (k.to(dtype) + 0.5) * size / g.to(dtype)
        return at, k < g

    ys, y_in = points(y1, bin_h, ph, grid_h, most_h)
    xs, x_in = points(x1, bin_w, pw, grid_w, most_w)
    # Every sample as (r, 1, ph, pw, most_h, most_w).
    ys, y_in = ys.view(-1, 1, ph, 1, most_h, 1), y_in.view(-1, 1, 1, 1, most_h, 1)
    xs, x_in = xs.view(-1, 1, 1, pw, 1, most_w), x_in.view(-1, 1, 1, 1, 1, most_w)
    ys, xs = torch.broadcast_tensors(ys, xs)
    taken = y_in & x_in
    if position_sensitive:
        channels = channels // (ph * pw)
        grid = torch.arange(channels * ph * pw, device=device).view(channels, ph, pw)
        channel = grid.view(1, channels, ph, pw, 1, 1)
    else:
        channel = torch.arange(channels, device=device).view(1, channels, 1, 1, 1, 1)
    image = batch.clamp(min=0).view(-1, 1, 1, 1, 1, 1)
    total = None
    for row, column, weight in _bilinear_corners(ys, xs, height, width):
        term = weight * data[image, channel, row, column]
        total = term if total is None else total + term
    total = torch.where(taken, total, torch.zeros_like(total))
    # MXNet adds the samples one after another, row by row.
    out = total[..., 0, 0]
    for k in range(1, most_h * most_w):
        out = out + total[..., k // most_w, k % most_w]
    out = out / (grid_h * grid_w).to(dtype).view(-1, 1, 1, 1)
    return torch.where((batch < 0).view(-1, 1, 1, 1), torch.zeros_like(out), out)


def roi_pooling(data, rois, pooled_size, spatial_scale):
    """MXNet's ``ROIPooling`` of (n, c, h, w) ``data`` over (r, 5) ``rois`` [batch index, x1,
    y1, x2, y2]: the rois' corners scaled and rounded (halves away from zero), each bin the
    max of its pixels (the first of equal ones takes the gradient); an empty bin, or a roi
    whose batch index is out of range, gives 0; a bin of values all <= -FLT_MAX gives
    -FLT_MAX."""
    ph, pw = pooled_size
    n, _, height, width = data.shape
    rois = rois.detach()
    scale = as_float32(spatial_scale)
    batch = rois[:, 0].to(torch.int64)
    bad = (batch < 0) | (batch >= n)
    x1, y1, x2, y2 = (_round_half_away(rois[:, k] * scale).long() for k in range(1, 5))
    roi_h = (y2 - y1 + 1).clamp(min=1).to(data.dtype)
    roi_w = (x2 - x1 + 1).clamp(min=1).to(data.dtype)
    dtype, device = data.dtype, data.device

    def bins(start, size, count, limit):
        # (r, count) first and end positions of each bin along one axis.
        step = size.view(-1, 1) / count
        i = torch.arange(count, device=device, dtype=dtype).view(1, -1)
        first = torch.floor(i * step).long() + start.view(-1, 1)
        end = torch.ceil((i + 1) * step).long() + start.view(-1, 1)
        return first.clamp(0, limit), end.clamp(0, limit)

    h0, h1 = bins(y1, roi_h, ph, height)
    w0, w1 = bins(x1, roi_w, pw, width)
    most_h = max(int((h1 - h0).max()) if rois.shape[0] else 1, 1)
    most_w = max(int((w1 - w0).max()) if rois.shape[0] else 1, 1)
    rows = h0.unsqueeze(-1) + torch.arange(most_h, device=device)  # (r, ph, most_h)
    cols = w0.unsqueeze(-1) + torch.arange(most_w, device=device)  # (r, pw, most_w)
    row_in, col_in = rows < h1.unsqueeze(-1), cols < w1.unsqueeze(-1)
    rows, cols = rows.clamp(max=height - 1), cols.clamp(max=width - 1)
    image = batch.clamp(0, n - 1).view(-1, 1, 1, 1, 1)
    # (r, ph, pw, most_h, most_w, c): the pixels of each bin, row by row.
    pixels = data[
        image,
        :,
        rows.view(-1, ph, 1, most_h, 1),
        cols.view(-1, 1, pw, 1, most_w),
    ]
    inside = row_in.view(-1, ph, 1, most_h, 1) & col_in.view(-1, 1, pw, 1, most_w)
    pixels = pixels.flatten(3, 4).permute(0, 4, 1, 2, 3)  # (r, c, ph, pw, window)
    inside = inside.flatten(3, 4).unsqueeze(1)
    candidates = pixels.detach().masked_fill(~inside | pixels.isnan(), float("-inf"))
    first = candidates.argmax(-1, keepdim=True)
    best = pixels.gather(-1, first).squeeze(-1)
    lowest = torch.full_like(best, _FLOAT32_LOWEST)
    out = torch.where(best > _FLOAT32_LOWEST, best, lowest)
    empty = (h1 <= h0).view(-1, 1, ph, 1) | (w1 <= w0).view(-1, 1, 1, pw)
    empty = empty | bad.view(-1, 1, 1, 1)
    return torch.where(empty, torch.zeros_like(out), out)
