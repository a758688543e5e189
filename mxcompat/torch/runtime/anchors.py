"""MXNet's SSD anchor operators: ``MultiBoxPrior``, ``MultiBoxDetection``, ``MultiBoxTarget``."""

import torch

from .boxes import as_float32, expf, greedy_keep, logf


def multibox_prior(
    data,
    sizes=(1.0,),
    ratios=(1.0,),
    clip=False,
    steps=(-1.0, -1.0),
    offsets=(0.5, 0.5),
):
    """MXNet's ``MultiBoxPrior``: (1, h * w * k, 4) corner anchors of an (n, c, h, w) feature
    map, computed in float32 as MXNet does; per pixel (row by row) first every size at the
    first ratio, then the first size at each further ratio.  ``steps`` (y, x) default to
    1 / h and 1 / w; ``clip`` clips to [0, 1].  Depends on ``data``'s shape only."""
    height, width = data.shape[2], data.shape[3]
    f32 = {"dtype": torch.float32, "device": data.device}
    step_y, step_x = (torch.tensor(s, **f32) for s in steps)
    if steps[0] <= 0 or steps[1] <= 0:
        step_y = torch.tensor(1.0, **f32) / height
        step_x = torch.tensor(1.0, **f32) / width
    center_y = (torch.arange(height, **f32) + as_float32(offsets[0])) * step_y
    center_x = (torch.arange(width, **f32) + as_float32(offsets[1])) * step_x
    sizes_t, ratios_t = torch.tensor(sizes, **f32), torch.tensor(ratios, **f32)
    size = torch.cat((sizes_t, sizes_t[:1].expand(len(ratios) - 1)))
    ratio = torch.sqrt(torch.cat((ratios_t[:1].expand(len(sizes)), ratios_t[1:])))
    half_w = size * height / width * ratio / 2
    half_h = size / ratio / 2
    cy = center_y.view(-1, 1, 1)
    cx = center_x.view(1, -1, 1)
    cy, cx = torch.broadcast_tensors(cy, cx.expand(height, width, 1))
    out = torch.stack((cx - half_w, cy - half_h, cx + half_w, cy + half_h), -1)
    if clip:
        out = out.clamp(0.0, 1.0)
    return out.reshape(1, -1, 4).to(data.dtype)


def _cmp_min(a, b):
    """``std::min(a, b)``: ``b < a ? b : a``."""
    return torch.where(b < a, b, a)


def _cmp_max(a, b):
    """``std::max(a, b)``: ``a < b ? b : a``."""
    return torch.where(a < b, b, a)


def _decode(anchors, loc, variances, clip):
    """MultiBoxDetection's corner boxes from the anchors and the predicted offsets."""
    left, top, right, bottom = anchors.unbind(-1)
    aw, ah = right - left, bottom - top
    ax, ay = (left + right) / 2.0, (top + bottom) / 2.0
    vx, vy, vw, vh = (as_float32(v) for v in variances)
    px, py, pw, ph = loc.unbind(-1)
    ox, oy = px * vx * aw + ax, py * vy * ah + ay
    ow, oh = expf(pw * vw) * aw / 2, expf(ph * vh) * ah / 2
    box = torch.stack((ox - ow, oy - oh, ox + ow, oy + oh), -1)
    if clip:
        box = _cmp_max(torch.zeros_like(box), _cmp_min(torch.ones_like(box), box))
    return box


def _iou(boxes):
    """(b, k, k) IoU of corner boxes as MultiBoxDetection computes it (0 where the union is
    <= 0)."""
    a, b = boxes.unsqueeze(-2), boxes.unsqueeze(-3)
    zero = torch.zeros((), dtype=boxes.dtype, device=boxes.device)
    w = _cmp_max(zero, _cmp_min(a[..., 2], b[..., 2]) - _cmp_max(a[..., 0], b[..., 0]))
    h = _cmp_max(zero, _cmp_min(a[..., 3], b[..., 3]) - _cmp_max(a[..., 1], b[..., 1]))
    inter = w * h
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    union = area_a + area_b - inter
    return torch.where(union <= 0, torch.zeros_like(union), inter / union)


def multibox_detection(
    cls_prob,
    loc_pred,
    anchors,
    clip=True,
    threshold=0.01,
    nms_threshold=0.5,
    force_suppress=False,
    variances=(0.1, 0.1, 0.2, 0.2),
    nms_topk=-1,
):
    """MXNet's ``MultiBoxDetection``: (b, k, 6) rows [class, score, x1, y1, x2, y2] from
    (b, classes, k) probabilities (class 0 the background), (b, k * 4) offsets and (1, k, 4)
    anchors.  Each anchor's best foreground class (the first of equal ones) scoring
    >= ``threshold`` makes a row; the rows are compacted in anchor order, the rest -1.  With
    0 < ``nms_threshold`` <= 1 the rows are sorted by score (ties in order), only the first
    ``nms_topk`` kept (the class of the others' rows set to -1), and a row whose IoU with a
    kept better one of its class (any, with ``force_suppress``) is >= ``nms_threshold`` has
    its class set to -1, in place.  MXNet's gradient is zero: the output is detached."""
    cls_prob, loc_pred = cls_prob.detach(), loc_pred.detach()
    batch, _, count = cls_prob.shape
    anchors = anchors.detach().reshape(-1, 4)[:count]
    foreground = cls_prob[:, 1:, :]
    candidates = torch.where(
        foreground > -1, foreground, torch.full_like(foreground, float("-inf"))
    )
    best, best_class = candidates.max(1)
    found = best > float("-inf")
    score = torch.where(found, best, torch.full_like(best, -1))
    valid = found & ~(score < as_float32(threshold))
    class_id = (best_class + 1).to(cls_prob.dtype) * valid - 1
    boxes = _decode(anchors, loc_pred.reshape(batch, count, 4), variances, clip)
    rows = torch.cat((class_id.unsqueeze(-1), score.unsqueeze(-1), boxes), -1)
    # The valid rows first, in anchor order; then rows of -1.
    first = torch.sort(
        valid.to(torch.uint8), dim=1, descending=True, stable=True
    ).indices
    rows = rows.gather(1, first.unsqueeze(-1).expand(-1, -1, 6))
    valid_count = valid.sum(1, keepdim=True)
    position = torch.arange(count, device=rows.device).unsqueeze(0)
    filled = position < valid_count
    rows = torch.where(filled.unsqueeze(-1), rows, torch.full_like(rows, -1))
    if not 0 < nms_threshold <= 1:
        return rows
    ranked = torch.where(
        filled, rows[..., 1], torch.full_like(rows[..., 1], float("-inf"))
    )
    order = torch.sort(ranked, dim=1, descending=True, stable=True).indices
    ordered = rows.gather(1, order.unsqueeze(-1).expand(-1, -1, 6))
    keep_count = valid_count
    if nms_topk > 0:
        keep_count = valid_count.clamp(max=nms_topk)
    alive = position < keep_count
    # Rows past nms_topk keep their unsorted values, their class set to -1.
    dropped = filled & ~alive
    rows = torch.where(alive.unsqueeze(-1), ordered, rows)
    suppresses = _iou(rows[..., 2:]) >= as_float32(nms_threshold)
    if not force_suppress:
        suppresses = suppresses & (rows[..., :1] == rows[..., 0].unsqueeze(-2))
    keep = greedy_keep(suppresses, alive)
    gone = dropped | (alive & ~keep)
    class_id = torch.where(gone, torch.full_like(rows[..., 0], -1), rows[..., 0])
    return torch.cat((class_id.unsqueeze(-1), rows[..., 1:]), -1)


def _larger(a, b):
    """mshadow's ``maximum``: ``a > b ? a : b``."""
    return torch.where(a > b, a, b)


def _smaller(a, b):
    """mshadow's ``minimum``: ``a < b ? a : b``."""
    return torch.where(a < b, a, b)


def _target_iou(anchors, labels):
    """(b, k, g) IoU of each anchor with each label's box (0 where the union is 0)."""
    a = anchors.view(1, -1, 1, 4)
    g = labels[..., 1:5].unsqueeze(1)
    zero = torch.zeros((), dtype=labels.dtype, device=labels.device)
    w = _larger(zero, _smaller(a[..., 2], g[..., 2]) - _larger(a[..., 0], g[..., 0]))
    h = _larger(zero, _smaller(a[..., 3], g[..., 3]) - _larger(a[..., 1], g[..., 1]))
    inter = w * h
    union = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    union = union + (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1]) - inter
    return torch.where(union == 0, torch.zeros_like(union), inter / union)


def _best_label(iou, labelled):
    """Each anchor's first label of the largest IoU > -1 (-1 and -1 where none)."""
    candidates = iou.masked_fill(~(labelled.unsqueeze(1) & (iou > -1)), float("-inf"))
    best, label = candidates.max(-1)
    found = best > float("-inf")
    return torch.where(found, best, torch.full_like(best, -1)), label, found


def _background_prob(cls_preds):
    """(b, k) softmax probability of class 0, summed class by class as MXNet does."""
    top = cls_preds[:, 0]
    for c in range(1, cls_preds.shape[1]):
        top = torch.where(cls_preds[:, c] > top, cls_preds[:, c], top)
    total = torch.zeros_like(top)
    for c in range(cls_preds.shape[1]):
        total = total + expf(cls_preds[:, c] - top)
    return expf(cls_preds[:, 0] - top) / total


def _encode(anchors, boxes, variances):
    """MultiBoxTarget's (b, k, 4) offsets of the matched boxes, computed in float32."""
    left, top, right, bottom = anchors.float().unbind(-1)
    aw, ah = right - left, bottom - top
    ax, ay = (left + right) * 0.5, (top + bottom) * 0.5
    gl, gt, gr, gb = boxes.float().unbind(-1)
    gw, gh = gr - gl, gb - gt
    gx, gy = (gl + gr) * 0.5, (gt + gb) * 0.5
    vx, vy, vw, vh = (as_float32(v) for v in variances)
    return torch.stack(
        (
            (gx - ax) / aw / vx,
            (gy - ay) / ah / vy,
            logf(gw / aw) / vw,
            logf(gh / ah) / vh,
        ),
        -1,
    )


def multibox_target(
    anchors,
    labels,
    cls_preds,
    overlap_threshold=0.5,
    ignore_label=-1.0,
    negative_mining_ratio=-1.0,
    negative_mining_thresh=0.5,
    variances=(0.1, 0.1, 0.2, 0.2),
):
    """MXNet's ``MultiBoxTarget``: (loc_target (b, k * 4), loc_mask (b, k * 4), cls_target
    (b, k)) of (1, k, 4) anchors, (b, g, >= 5) labels [class, x1, y1, x2, y2] (the labels
    end at the first of class -1) and (b, classes, k) predictions.  Each label first takes
    the free anchor of the largest IoU (> 1e-6, largest first); with ``overlap_threshold``
    > 0 every other anchor whose best IoU exceeds it is positive too.  With
    ``negative_mining_ratio`` > 0 the ``ratio`` x positives anchors of best IoU <
    ``negative_mining_thresh`` and least background probability are negatives (class 0),
    else every other anchor is; the rest get ``ignore_label``.  MXNet's gradient is zero:
    the outputs are detached."""
    anchors = anchors.detach().reshape(-1, 4)
    labels, cls_preds = labels.detach(), cls_preds.detach()
    batch, count = labels.shape[0], anchors.shape[0]
    rows = torch.arange(batch, device=labels.device)
    iou = _target_iou(anchors, labels).float()
    labelled = torch.cumsum((labels[..., 0].float() == -1).int(), 1) == 0
    any_label = labelled.any(1, keepdim=True)
    positive = torch.zeros(batch, count, dtype=torch.bool, device=labels.device)
    matched = torch.zeros(batch, count, dtype=torch.int64, device=labels.device)
    match_iou = torch.full((batch, count), -1.0, device=labels.device)
    label_done = ~labelled
    smallest = as_float32(1e-6)
    for _ in range(labels.shape[1]):
        free = iou.masked_fill(
            positive.unsqueeze(-1) | label_done.unsqueeze(1), float("-inf")
        )
        best, at = free.flatten(1).max(1)
        found = best > smallest
        if not bool(found.any()):
            break
        b, anchor, label = (
            rows[found],
            at[found] // iou.shape[2],
            at[found] % iou.shape[2],
        )
        positive[b, anchor] = True
        matched[b, anchor] = label
        match_iou[b, anchor] = best[found]
        label_done[b, label] = True
    best, label, found = _best_label(iou, labelled)
    if overlap_threshold > 0:
        chosen = ~positive & found
        match_iou = torch.where(chosen, best, match_iou)
        matched = torch.where(chosen, label, matched)
        positive = positive | (chosen & (best > as_float32(overlap_threshold)))
    if negative_mining_ratio > 0:
        unset = ~positive & (match_iou < 0) & found
        match_iou = torch.where(unset, best, match_iou)
        wanted = (positive.sum(1).float() * as_float32(negative_mining_ratio)).long()
        wanted = torch.minimum(wanted, count - positive.sum(1))
        eligible = ~positive & (match_iou < as_float32(negative_mining_thresh))
        prob = _background_prob(cls_preds)
        ranked = prob.masked_fill(~eligible, float("inf"))
        order = torch.sort(ranked, dim=1, stable=True).indices
        rank = torch.empty_like(order).scatter_(
            1, order, torch.arange(count, device=order.device).expand_as(order)
        )
        negative = eligible & (rank < wanted.unsqueeze(1))
    else:
        negative = ~positive & any_label
    mine = labels.gather(1, matched.unsqueeze(-1).expand(-1, -1, labels.shape[2]))
    ignore = torch.full_like(mine[..., 0], ignore_label)
    cls_target = torch.where(negative, torch.zeros_like(ignore), ignore)
    cls_target = torch.where(positive, mine[..., 0] + 1, cls_target)
    loc = _encode(anchors.unsqueeze(0), mine[..., 1:5], variances).to(labels.dtype)
    mask = positive.unsqueeze(-1).expand(-1, -1, 4)
    loc_target = torch.where(mask, loc, torch.zeros_like(loc)).reshape(batch, -1)
    return loc_target, mask.to(labels.dtype).reshape(batch, -1), cls_target
