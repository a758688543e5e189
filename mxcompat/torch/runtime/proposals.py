"""MXNet's region proposal operators: ``Proposal`` and ``MultiProposal``."""

import torch

from .boxes import as_float32, expf, greedy_keep


def _f32(value, device):
    return torch.tensor(value, dtype=torch.float32, device=device)


def rpn_anchors(scales, ratios, feature_stride, device=None):
    """(len(ratios) * len(scales), 4) anchors of one cell, ratio by ratio, computed in
    float32 as MXNet does (the sizes rounded to whole pixels)."""
    side = _f32(feature_stride - 1.0, device)
    w = h = side + 1.0
    center = (side * 0 + 0.5 * (w.double() - 1.0)).float()
    size = w * h
    ratio = _f32(ratios, device).view(-1, 1)
    scale = _f32(scales, device).view(1, -1)
    size_ratios = torch.floor(size / ratio)
    new_w = torch.floor(torch.sqrt(size_ratios) + 0.5) * scale
    new_h = torch.floor((new_w / scale * ratio) + 0.5) * scale
    half_w, half_h = 0.5 * (new_w - 1.0), 0.5 * (new_h - 1.0)
    box = (center - half_w, center - half_h, center + half_w, center + half_h)
    return torch.stack(box, -1).reshape(-1, 4)


def _cmp_min(a, b):
    """``std::min(a, b)``: ``b < a ? b : a``."""
    return torch.where(b < a, b, a)


def _cmp_max(a, b):
    """``std::max(a, b)``: ``a < b ? b : a``."""
    return torch.where(a < b, b, a)


def _decode(anchors, deltas, iou_loss):
    """Proposal boxes from anchors and deltas, in float32 where MXNet computes in float and
    in float64 where its expressions are double."""
    if iou_loss:
        return anchors + deltas
    x1, y1, x2, y2 = anchors.unbind(-1)
    dx, dy, dw, dh = deltas.unbind(-1)
    width, height = x2 - x1 + 1.0, y2 - y1 + 1.0
    cx = (x1.double() + 0.5 * (width.double() - 1.0)).float()
    cy = (y1.double() + 0.5 * (height.double() - 1.0)).float()
    px, py = dx * width + cx, dy * height + cy
    pw = (expf(dw) * width).double() - 1.0
    ph = (expf(dh) * height).double() - 1.0
    px, py = px.double(), py.double()
    box = (px - 0.5 * pw, py - 0.5 * ph, px + 0.5 * pw, py + 0.5 * ph)
    return torch.stack(box, -1).float()


def _nms_overlap(boxes, area):
    """(b, k, k) overlap of each pair of sorted proposals, MXNet's +1 pixel convention."""
    a, b = boxes.unsqueeze(-2), boxes.unsqueeze(-3)
    zero = torch.zeros((), dtype=boxes.dtype, device=boxes.device)
    w = _cmp_max(
        zero, _cmp_min(a[..., 2], b[..., 2]) - _cmp_max(a[..., 0], b[..., 0]) + 1.0
    )
    h = _cmp_max(
        zero, _cmp_min(a[..., 3], b[..., 3]) - _cmp_max(a[..., 1], b[..., 1]) + 1.0
    )
    inter = w * h
    return inter / (area.unsqueeze(-1) + area.unsqueeze(-2) - inter)


def proposal(
    cls_prob,
    bbox_pred,
    im_info,
    rpn_pre_nms_top_n=6000,
    rpn_post_nms_top_n=300,
    threshold=0.7,
    rpn_min_size=16,
    scales=(4.0, 8.0, 16.0, 32.0),
    ratios=(0.5, 1.0, 2.0),
    feature_stride=16,
    output_score=False,
    iou_loss=False,
    batched=True,
):
    """MXNet's ``MultiProposal`` (and ``Proposal``, its batch of one): per image, the
    anchors of each cell moved by ``bbox_pred`` and clipped to ``im_info``'s (height, width);
    those of cells past the image, or smaller than ``rpn_min_size`` x ``im_info``'s scale
    (grown by it), scored -1; the best ``rpn_pre_nms_top_n`` by score (ties in order) kept
    greedily where overlap <= ``threshold``, the first ``rpn_post_nms_top_n`` of them
    repeated to fill that many rows [image, x1, y1, x2, y2] (and their scores, with
    ``output_score``).  In float32; MXNet's gradient is zero: the outputs are detached.
    ``batched=False``: ``Proposal``, which takes one image only."""
    cls_prob, bbox_pred = cls_prob.detach().float(), bbox_pred.detach().float()
    im_info = im_info.detach().float()
    batch, channels, height, width = cls_prob.shape
    if not batched and batch != 1:
        raise ValueError(
            f"Proposal takes one image (MultiProposal a batch): got {batch}"
        )
    count = channels // 2
    device = cls_prob.device
    base = rpn_anchors(scales, ratios, feature_stride, device)  # (count, 4)
    shift_x = torch.arange(width, device=device).float() * feature_stride
    shift_y = torch.arange(height, device=device).float() * feature_stride
    shift = torch.stack(
        torch.broadcast_tensors(shift_x.view(1, -1), shift_y.view(-1, 1)), -1
    )
    shift = shift.repeat(1, 1, 2).view(height, width, 1, 4)
    anchors = (base + shift).expand(batch, -1, -1, -1, -1)  # (b, h, w, count, 4)
    scores = cls_prob[:, count:].permute(0, 2, 3, 1)  # (b, h, w, count)
    deltas = bbox_pred.view(batch, count, 4, height, width).permute(0, 3, 4, 1, 2)
    boxes = _decode(anchors, deltas, iou_loss)
    image_h, image_w = im_info[:, 0].view(-1, 1, 1, 1), im_info[:, 1].view(-1, 1, 1, 1)
    zero = torch.zeros((), device=device)
    x1, y1, x2, y2 = boxes.unbind(-1)
    x1, x2 = (_cmp_max(_cmp_min(v, image_w - 1.0), zero) for v in (x1, x2))
    y1, y2 = (_cmp_max(_cmp_min(v, image_h - 1.0), zero) for v in (y1, y2))
    real_h = (im_info[:, 0] / feature_stride).long().view(-1, 1, 1, 1)
    real_w = (im_info[:, 1] / feature_stride).long().view(-1, 1, 1, 1)
    row = torch.arange(height, device=device).view(1, -1, 1, 1)
    column = torch.arange(width, device=device).view(1, 1, -1, 1)
    outside = (row >= real_h) | (column >= real_w)
    minimum = (rpn_min_size * im_info[:, 2]).view(-1, 1, 1, 1)
    small = (x2 - x1 + 1.0 < minimum) | (y2 - y1 + 1.0 < minimum)
    grow = torch.where(small, minimum / 2, torch.zeros_like(x1))
    boxes = torch.stack((x1 - grow, y1 - grow, x2 + grow, y2 + grow), -1)
    scores = torch.where(outside | small, torch.full_like(scores, -1), scores)
    boxes, scores = boxes.reshape(batch, -1, 4), scores.reshape(batch, -1)
    total = scores.shape[1]
    pre = min(rpn_pre_nms_top_n, total) if rpn_pre_nms_top_n > 0 else total
    post = min(rpn_post_nms_top_n, pre)
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices[:, :pre]
    boxes = boxes.gather(1, order.unsqueeze(-1).expand(-1, -1, 4))
    scores = scores.gather(1, order)
    area = (boxes[..., 2] - boxes[..., 0] + 1) * (boxes[..., 3] - boxes[..., 1] + 1)
    suppresses = _nms_overlap(boxes, area) > as_float32(threshold)
    alive = torch.ones_like(scores, dtype=torch.bool)
    keep = greedy_keep(suppresses, alive)
    kept = torch.sort(keep.to(torch.uint8), dim=1, descending=True, stable=True).indices
    found = keep.sum(1, keepdim=True).clamp(max=post)
    slot = torch.arange(rpn_post_nms_top_n, device=device).view(1, -1) % found
    picked = kept.gather(1, slot)
    boxes = boxes.gather(1, picked.unsqueeze(-1).expand(-1, -1, 4))
    image = torch.arange(batch, device=device).float().view(-1, 1, 1)
    rows = torch.cat((image.expand(-1, rpn_post_nms_top_n, 1), boxes), -1).reshape(
        -1, 5
    )
    if output_score:
        return rows, scores.gather(1, picked).reshape(-1, 1)
    return rows
