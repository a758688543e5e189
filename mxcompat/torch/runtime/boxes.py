"""MXNet's box operators: ``box_nms``, ``box_encode``, ``box_decode``."""

import torch


def as_float32(value):
    """A float parameter as MXNet holds it (a C ``float``), as a Python number."""
    return float(torch.tensor(value, dtype=torch.float32))


def expf(x):
    """C's float ``expf``, correctly rounded (torch's float32 ``exp`` may be an ulp away)."""
    return (
        torch.exp(x.double()).to(x.dtype) if x.dtype == torch.float32 else torch.exp(x)
    )


def logf(x):
    """C's float ``logf``, correctly rounded (torch's float32 ``log`` may be an ulp away)."""
    return (
        torch.log(x.double()).to(x.dtype) if x.dtype == torch.float32 else torch.log(x)
    )


class _GradientOf(torch.autograd.Function):
    """``value`` forward, ``source``'s gradient backward: MXNet's ``box_nms`` hands its output's
    gradient back unchanged where it re-encodes a box (corner <-> center)."""

    @staticmethod
    def forward(ctx, value, source):
        return value.clone()

    @staticmethod
    def backward(ctx, grad):
        return None, grad


def _pick(a, b, first):
    """``a if first else b``, elementwise (a comparison's ternary: no NaN propagation)."""
    return torch.where(first, a, b)


def _overlap(a_lo, a_hi, b_lo, b_hi, center):
    """The length two intervals share (0 where none), MXNet's way: corner intervals as
    (lo, hi), center ones as (middle, length)."""
    if center:
        a_half, b_half = a_hi / 2, b_hi / 2
        a_lo, a_hi = a_lo - a_half, a_lo + a_half
        b_lo, b_hi = b_lo - b_half, b_lo + b_half
        left = _pick(b_lo, a_lo, b_lo > a_lo)
        right = _pick(b_hi, a_hi, b_hi < a_hi)
    else:
        left = _pick(a_lo, b_lo, a_lo > b_lo)
        right = _pick(a_hi, b_hi, a_hi < b_hi)
    width = right - left
    return torch.where(width > 0, width, torch.zeros_like(width))


def _area(box, center):
    """A box's area; 0 where its width or height is negative."""
    if center:
        width, height = box[..., 2], box[..., 3]
    else:
        width, height = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    empty = (width < 0) | (height < 0)
    return torch.where(empty, torch.zeros_like(width), width * height)


def pairwise_iou(boxes, center=False):
    """(..., k, k) IoU of each pair of boxes (..., k, 4), row the reference, as MXNet's
    ``box_nms`` computes it."""
    ref, pos = boxes.unsqueeze(-2), boxes.unsqueeze(-3)
    inter = _overlap(ref[..., 0], ref[..., 2], pos[..., 0], pos[..., 2], center)
    inter = inter * _overlap(ref[..., 1], ref[..., 3], pos[..., 1], pos[..., 3], center)
    area = _area(boxes, center)
    return inter / (area.unsqueeze(-1) + area.unsqueeze(-2) - inter)


def greedy_keep(suppresses, alive):
    """Greedy non-maximum suppression over candidates sorted best first: ``suppresses[..., i,
    j]`` says candidate ``i`` (if kept) suppresses ``j``, ``alive`` which are candidates.  A
    candidate is kept when no kept candidate before it suppresses it; the loop finds that
    unique assignment (each pass settles at least the next candidate; it stops when a pass
    changes nothing)."""
    k = alive.shape[-1]
    before = torch.ones(k, k, dtype=torch.bool, device=alive.device).triu(1)
    suppresses = suppresses & before & alive.unsqueeze(-1)
    keep = alive
    for _ in range(k + 1):
        new = alive & ~(suppresses & keep.unsqueeze(-1)).any(-2)
        if torch.equal(new, keep):
            break
        keep = new
    return keep


def _convert(coords, to_center):
    """Corner boxes as center ones or back (MXNet leaves a box whose first value is < 0)."""
    a, b, c, d = coords.unbind(-1)
    if to_center:
        new = torch.stack(((a + c) / 2, (b + d) / 2, c - a, d - b), -1)
    else:
        half_w, half_h = c / 2, d / 2
        new = torch.stack((a - half_w, b - half_h, a + half_w, b + half_h), -1)
    new = torch.where((a < 0).unsqueeze(-1), coords, new)
    return _GradientOf.apply(new, coords)


def box_nms(
    data,
    overlap_thresh=0.5,
    valid_thresh=0.0,
    topk=-1,
    coord_start=2,
    score_index=1,
    id_index=-1,
    background_id=-1,
    force_suppress=False,
    in_format="corner",
    out_format="corner",
):
    """MXNet's ``box_nms`` on (..., n, width) boxes (leading axes a batch): per batch, boxes
    whose score is > ``valid_thresh`` (and, with ``id_index``, whose class is not
    ``background_id``) sorted by score (ties in input order), the first ``topk`` of them
    suppressed greedily where IoU > ``overlap_thresh`` (within a class, compared as ints,
    unless ``force_suppress``); the kept rows first, the rest -1.  ``topk=0`` returns the
    input.  The gradient goes to the kept rows' inputs unchanged."""
    shape = data.shape
    n, width = shape[-2], shape[-1]
    topk = n if topk < 0 else min(n, topk)
    if topk < 1:
        return data.clone()
    flat = data.reshape(-1, n, width)
    batch = flat.shape[0]
    scores = flat[..., score_index]
    valid = scores > as_float32(valid_thresh)
    if id_index >= 0:
        valid = valid & (flat[..., id_index] != background_id)
    ranked = scores.masked_fill(~valid, float("-inf"))
    order = torch.sort(ranked, dim=1, descending=True, stable=True).indices[:, :topk]
    alive = torch.arange(topk, device=data.device) < valid.sum(1, keepdim=True)
    candidates = flat.detach().gather(1, order.unsqueeze(-1).expand(-1, -1, width))
    coords = candidates[..., coord_start : coord_start + 4]
    center = in_format == "center"
    suppresses = pairwise_iou(coords, center) > as_float32(overlap_thresh)
    if id_index >= 0 and not force_suppress:
        ids = torch.trunc(candidates[..., id_index])
        suppresses = suppresses & (ids.unsqueeze(-1) == ids.unsqueeze(-2))
    keep = greedy_keep(suppresses, alive)
    # The kept candidates first, in order; their input rows gathered (the gradient's path).
    first = torch.sort(
        keep.to(torch.uint8), dim=1, descending=True, stable=True
    ).indices
    rows = order.gather(1, first)
    if topk < n:
        rows = torch.cat((rows, rows.new_zeros(batch, n - topk)), 1)
    filled = torch.arange(n, device=data.device) < keep.sum(1, keepdim=True)
    picked = flat.gather(1, rows.unsqueeze(-1).expand(-1, -1, width))
    out = torch.where(filled.unsqueeze(-1), picked, torch.full_like(picked, -1))
    if in_format != out_format:
        end = coord_start + 4
        coords = _convert(out[..., coord_start:end], out_format == "center")
        out = torch.cat((out[..., :coord_start], coords, out[..., end:]), -1)
    return out.reshape(shape)


def _in_double(fn, *args):
    """``fn`` of float32 values computed in float64, as C's unqualified ``log`` computes."""
    if args[0].dtype != torch.float32:
        return fn(*args)
    return fn(*(a.double() for a in args)).float()


def box_encode(samples, matches, anchors, refs, means, stds):
    """MXNet's ``box_encode``: (targets, masks), each (b, n, 4).  The target of anchor
    (corner box) ``i`` is its matched reference's center offset over the anchor's size and
    log size ratio, less ``means``, over ``stds``, where ``samples > 0.5``; else 0.  The
    mask is 1 there, else 0.  MXNet's gradient is zero: the outputs are detached."""
    b, n = anchors.shape[0], anchors.shape[1]
    m = refs.shape[1]
    samples, matches = samples.detach().reshape(b, n), matches.detach().reshape(b, n)
    anchors, refs = anchors.detach().reshape(b, n, 4), refs.detach().reshape(b, m, 4)
    means, stds = means.detach(), stds.detach()
    # A match out of range has no row to read (MXNet reads past its input): only the
    # positives' are used.
    index = matches.to(torch.int64).clamp(0, m - 1)
    ref = refs.gather(1, index.unsqueeze(-1).expand(-1, -1, 4))

    def centers(box):
        w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
        return box[..., 0] + w * 0.5, box[..., 1] + h * 0.5, w, h

    rx, ry, rw, rh = centers(ref)
    ax, ay, aw, ah = centers(anchors)
    encoded = torch.stack(
        (
            ((rx - ax) / aw - means[0]) / stds[0],
            ((ry - ay) / ah - means[1]) / stds[1],
            _in_double(
                lambda r, m, s: (torch.log(r) - m) / s, rw / aw, means[2], stds[2]
            ),
            _in_double(
                lambda r, m, s: (torch.log(r) - m) / s, rh / ah, means[3], stds[3]
            ),
        ),
        -1,
    )
    positive = (samples > 0.5).unsqueeze(-1).expand(-1, -1, 4)
    targets = torch.where(positive, encoded, torch.zeros_like(encoded))
    return targets, positive.to(anchors.dtype)


def box_decode(
    data, anchors, std0=1.0, std1=1.0, std2=1.0, std3=1.0, clip=-1.0, format="center"
):
    """MXNet's ``box_decode``: (b, n, 4) offsets against ``n`` anchors (``format`` their
    encoding) as corner boxes; the size offsets clipped at ``clip`` where it is > 0
    before their ``exp``.  MXNet's gradient is zero: the output is detached."""
    n = data.shape[1]
    x = data.detach()
    a = anchors.detach().reshape(1, n, 4)
    ax, ay, aw, ah = a.unbind(-1)
    if format == "corner":
        aw, ah = aw - ax, ah - ay
        ax, ay = ax + aw * 0.5, ay + ah * 0.5
    std0, std1, std2, std3 = (as_float32(s) for s in (std0, std1, std2, std3))
    ox = x[..., 0] * std0 * aw + ax
    oy = x[..., 1] * std1 * ah + ay
    dw, dh = x[..., 2] * std2, x[..., 3] * std3
    if clip > 0:
        limit = torch.full_like(dw, as_float32(clip))
        dw, dh = torch.where(dw < limit, dw, limit), torch.where(dh < limit, dh, limit)
    ow, oh = expf(dw) * aw * 0.5, expf(dh) * ah * 0.5
    return torch.stack((ox - ow, oy - oh, ox + ow, oy + oh), -1)
