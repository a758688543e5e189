"""to_torch on MXNet's detection operators (box_nms, box_encode, box_decode, ROIAlign,
ROIPooling, MultiBoxPrior, MultiBoxDetection, MultiBoxTarget, Proposal, MultiProposal): every
operator and parameter compared with MXNet in the same run (index-like outputs exactly, the
rest within a float32 ulp or two), gradients where MXNet has them, and each value the
converter does not map refused by name."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest

import mxcompat

_SPEC = importlib.util.find_spec("torch")
_MXNET = tuple(int(v) for v in mx.__version__.split(".")[:2])
_BOX_CODING = pytest.mark.skipif(
    not hasattr(mx.sym.contrib, "box_decode"), reason="box_encode/box_decode came in MXNet 1.6"
)
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)


def _mxnet(symbol, feed, grad_of=None, out_grad=None):
    """MXNet's outputs of ``symbol`` on ``feed`` ({name: array}), and the gradient of
    ``grad_of`` for ``out_grad`` (one per output)."""
    req = {n: ("write" if n == grad_of else "null") for n in symbol.list_arguments()}
    ex = symbol.simple_bind(
        mx.cpu(),
        grad_req=req,
        type_dict={n: v.dtype for n, v in feed.items()},
        **{n: v.shape for n, v in feed.items()},
    )
    for n, a in ex.arg_dict.items():
        a[:] = feed[n]
    outs = [o.asnumpy() for o in ex.forward(is_train=grad_of is not None)]
    if grad_of is None:
        return outs, None
    ex.backward([mx.nd.array(g, dtype=g.dtype) for g in out_grad])
    return outs, ex.grad_dict[grad_of].asnumpy()


def _torch(symbol, feed, grad_of=None, out_grad=None):
    """The converted module (verified against MXNet on its own random input), its outputs on
    ``feed``, and the gradient of input ``grad_of``."""
    import torch

    module = mxcompat.to_torch((symbol, {}, {}), {n: v.shape for n, v in feed.items()})
    inputs = [torch.from_numpy(feed[n].copy()) for n in symbol.list_arguments()]
    if grad_of is not None:
        inputs[symbol.list_arguments().index(grad_of)].requires_grad_(True)
    outs = module(*inputs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    grad = None
    if grad_of is not None:
        torch.autograd.backward(outs, [torch.from_numpy(g) for g in out_grad])
        grad = inputs[symbol.list_arguments().index(grad_of)].grad
        grad = np.zeros_like(feed[grad_of]) if grad is None else grad.numpy()
    return module, [o.detach().numpy() for o in outs], grad


def _same(got, want, ulps=0):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    if ulps == 0:
        np.testing.assert_array_equal(got, want)
    else:
        scale = np.spacing(np.maximum(np.abs(want), 1).astype(want.dtype))
        np.testing.assert_array_less(np.abs(got - want), ulps * scale + 1e-30)


def _summed(got, want):
    """Gradients MXNet sums in another order: within float32 rounding of their scale."""
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.abs(got - want).max() <= 1e-6 * max(1.0, np.abs(want).max())


def _compare(symbol, feed, ulps=0, grad_of=None, seed=0, summed=False):
    """MXNet's and the converted module's outputs (and gradients) agree; MXNet's outputs."""
    out_grad = None
    if grad_of is not None:
        rng = np.random.RandomState(seed)
        shapes = symbol.infer_shape(**{n: v.shape for n, v in feed.items()})[1]
        out_grad = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    want, want_grad = _mxnet(symbol, feed, grad_of, out_grad)
    module, got, got_grad = _torch(symbol, feed, grad_of, out_grad)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w, ulps)
    if grad_of is not None:
        if summed:
            _summed(got_grad, want_grad)
        else:
            _same(got_grad, want_grad)
    return module, want


def _refused(symbol, shapes, detail):
    with pytest.raises(Exception, match=detail):
        mxcompat.to_torch((symbol, {}, {}), shapes, verify=False)


# --- box_nms --------------------------------------------------------------------------------------


def _boxes(shape, seed=0, center=False):
    """Detections [id, score, x1, y1, x2, y2, extra] with ties, overlaps and a few negative
    corners."""
    rng = np.random.RandomState(seed)
    n = shape[-2]
    lead = shape[:-2]
    ids = rng.randint(0, 3, lead + (n, 1)).astype(np.float32)
    scores = np.round(rng.uniform(-0.2, 1.0, lead + (n, 1)), 1).astype(np.float32)
    xy = rng.uniform(-0.1, 0.6, lead + (n, 2)).astype(np.float32)
    wh = rng.uniform(0.05, 0.4, lead + (n, 2)).astype(np.float32)
    coords = np.concatenate([xy + wh / 2, wh] if center else [xy, xy + wh], -1)
    extra = rng.uniform(-1, 1, lead + (n, shape[-1] - 6)).astype(np.float32)
    return np.concatenate([ids, scores, coords, extra], -1)


NMS_CASES = [
    {},
    {"overlap_thresh": 0.3},
    {"overlap_thresh": 0.7, "valid_thresh": 0.35},
    {"topk": 5},
    {"topk": 0},
    {"topk": 100},
    {"id_index": 0},
    {"id_index": 0, "force_suppress": True, "overlap_thresh": 0.2},
    {"id_index": 0, "background_id": 1},
    {"id_index": 0, "background_id": 2, "topk": 7, "valid_thresh": 0.1},
    {"in_format": "center", "out_format": "center"},
    {"in_format": "center", "out_format": "corner", "overlap_thresh": 0.25},
    {"in_format": "corner", "out_format": "center", "id_index": 0},
    {"valid_thresh": 2.0},  # nothing valid: every row -1
]


@pytest.mark.parametrize("params", NMS_CASES, ids=lambda p: ",".join(map(str, p.items())) or "-")
@pytest.mark.parametrize("shape", [(24, 7), (2, 3, 16, 7)])
def test_box_nms(params, shape):
    x = _boxes(shape, seed=len(shape), center=params.get("in_format") == "center")
    sym = mx.sym.contrib.box_nms(mx.sym.var("data"), name="nms", **params)
    _, (want,) = _compare(sym, {"data": x}, grad_of="data")
    if params.get("topk") != 0 and params.get("valid_thresh") != 2.0:
        assert (want == -1).all(-1).any() and not (want == -1).all()


def test_box_nms_other_columns_and_alias():
    # score and id after the coordinates, coordinates not at 2
    x = _boxes((30, 8), seed=5)[:, [2, 3, 4, 5, 0, 6, 1, 7]]
    sym = mx.sym.contrib.box_non_maximum_suppression(
        mx.sym.var("data"),
        coord_start=0,
        score_index=6,
        id_index=4,
        overlap_thresh=0.3,
        topk=12,
        name="nms",
    )
    module, _ = _compare(sym, {"data": x}, grad_of="data")
    assert "mxops.box_nms" in module.code


def test_box_nms_float64():
    x = _boxes((20, 6), seed=7).astype(np.float64)
    sym = mx.sym.contrib.box_nms(mx.sym.var("data"), overlap_thresh=0.3, valid_thresh=0.3)
    _compare(sym, {"data": x})


# --- box_encode / box_decode ----------------------------------------------------------------------


def _corner(rng, shape):
    xy = rng.uniform(0, 0.7, shape[:-1] + (2,))
    wh = rng.uniform(0.05, 0.3, shape[:-1] + (2,))
    return np.concatenate([xy, xy + wh], -1).astype(np.float32)


@_BOX_CODING
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"std0": 0.1, "std1": 0.1, "std2": 0.2, "std3": 0.2},
        {"clip": 0.5},
        {"format": "corner"},
        {"format": "corner", "clip": 1.2, "std2": 0.3},
    ],
    ids=lambda p: ",".join(map(str, p.items())) or "-",
)
def test_box_decode(params):
    rng = np.random.RandomState(1)
    x = rng.uniform(-2, 2, (2, 10, 4)).astype(np.float32)
    anchors = _corner(rng, (1, 10, 4))
    sym = mx.sym.contrib.box_decode(mx.sym.var("data"), mx.sym.var("anchors"), **params)
    _compare(sym, {"data": x, "anchors": anchors}, ulps=0)


@_BOX_CODING
def test_box_encode():
    rng = np.random.RandomState(2)
    b, n, m = 2, 9, 4
    feed = {
        "samples": rng.choice([-1.0, 0.0, 1.0], (b, n)).astype(np.float32),
        "matches": rng.randint(0, m, (b, n)).astype(np.float32),
        "anchors": _corner(rng, (b, n, 4)),
        "refs": _corner(rng, (b, m, 4)),
        "means": np.array([0.0, 0.1, -0.1, 0.2], np.float32),
        "stds": np.array([0.1, 0.1, 0.2, 0.2], np.float32),
    }
    sym = mx.sym.contrib.box_encode(*[mx.sym.var(k) for k in feed])
    _compare(mx.sym.Group(list(sym)), feed, ulps=0)


# --- ROIAlign / ROIPooling ------------------------------------------------------------------------


def _rois(count, batch, size, seed=0, negative=False):
    """[batch index, x1, y1, x2, y2] rois on an image of ``size`` pixels: some tiny, some
    past the edges, some reversed."""
    rng = np.random.RandomState(seed)
    xy = rng.uniform(-0.2 * size, size, (count, 2))
    wh = rng.uniform(-2, 0.8 * size, (count, 2))
    index = rng.randint(0, batch, (count, 1)).astype(np.float64)
    if negative:
        index[::5] = -1
    return np.concatenate([index, xy, xy + wh], 1).astype(np.float32)


ALIGN_CASES = [
    {"pooled_size": (2, 2), "spatial_scale": 0.5},
    {"pooled_size": (3, 2), "spatial_scale": 0.25, "sample_ratio": 2},
    {"pooled_size": (7, 7), "spatial_scale": 0.0625, "sample_ratio": 3},
    {"pooled_size": (2, 3), "spatial_scale": 1.0},
    {"pooled_size": (2, 2), "spatial_scale": 0.5, "position_sensitive": True},
    {"pooled_size": (3, 3), "spatial_scale": 0.5, "sample_ratio": 1, "position_sensitive": True},
]


@pytest.mark.parametrize("params", ALIGN_CASES, ids=lambda p: ",".join(map(str, p.values())))
def test_roi_align(params):
    rng = np.random.RandomState(4)
    ph, pw = params["pooled_size"]
    channels = 2 * ph * pw if params.get("position_sensitive") else 3
    data = rng.uniform(-1, 1, (2, channels, 9, 11)).astype(np.float32)
    rois = _rois(10, 2, 11 / params["spatial_scale"], seed=ph * 10 + pw)
    sym = mx.sym.contrib.ROIAlign(mx.sym.var("data"), mx.sym.var("rois"), **params)
    _compare(sym, {"data": data, "rois": rois}, grad_of="data", summed=True)


@pytest.mark.skipif(
    "aligned" not in (mx.sym.contrib.ROIAlign.__doc__ or ""),
    reason="ROIAlign's aligned came in MXNet 1.7",
)
def test_roi_align_aligned():
    rng = np.random.RandomState(5)
    data = rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)
    rois = _rois(12, 2, 16, seed=3)
    rois[:, 3:] = np.maximum(rois[:, 3:], rois[:, 1:3] + 0.5)  # aligned needs width, height > 0
    for params in ({"sample_ratio": 2}, {}):
        sym = mx.sym.contrib.ROIAlign(
            mx.sym.var("data"),
            mx.sym.var("rois"),
            pooled_size=(2, 3),
            spatial_scale=0.5,
            aligned=True,
            **params,
        )
        # MXNet refuses the verifier's random rois (of negative widths): compared here only.
        want, want_grad = _mxnet(
            sym, {"data": data, "rois": rois}, "data", [np.ones((12, 3, 2, 3), np.float32)]
        )
        import torch

        module = mxcompat.to_torch(
            (sym, {}, {}), {"data": data.shape, "rois": rois.shape}, verify=False
        )
        x = torch.from_numpy(data).requires_grad_(True)
        got = module(x, torch.from_numpy(rois))
        got.sum().backward()
        _same(got.detach().numpy(), want[0], ulps=0)
        _summed(x.grad.numpy(), want_grad)


_POOLED = [((2, 2), 1.0), ((3, 3), 0.5), ((4, 2), 0.25), ((7, 7), 0.0625)]


@pytest.mark.parametrize("pooled,scale", _POOLED)
def test_roi_pooling(pooled, scale, grad_of=None):
    rng = np.random.RandomState(6)
    # few distinct values: ties, where the first maximum takes the gradient
    data = np.round(rng.uniform(-1, 1, (3, 4, 10, 12)), 1).astype(np.float32)
    # batch index 3: out of range, zeros (from MXNet 1.6; before, it read outside the input)
    rois = _rois(14, 4 if _MXNET >= (1, 6) else 3, 12 / scale, seed=pooled[0])
    rois[0, 1:] = [2.5 / scale, 1.5 / scale, 6.5 / scale, 3.5 / scale]  # halves
    sym = mx.sym.ROIPooling(
        mx.sym.var("data"), mx.sym.var("rois"), pooled_size=pooled, spatial_scale=scale
    )
    _compare(sym, {"data": data, "rois": rois}, grad_of=grad_of)


@pytest.mark.skipif(
    _MXNET < (1, 6),
    reason="before 1.6 MXNet's ROIPooling backward searched each pixel's bins (another "
    "algorithm, other results); to_torch's gradient is 1.9.1's",
)
@pytest.mark.parametrize("pooled,scale", _POOLED)
def test_roi_pooling_gradient(pooled, scale):
    test_roi_pooling(pooled, scale, grad_of="data")


# --- MultiBoxPrior / MultiBoxDetection ------------------------------------------------------------


PRIOR_CASES = [
    {},
    {"sizes": (0.2, 0.272), "ratios": (1, 2, 0.5)},
    {"sizes": (0.75, 0.9), "ratios": (1, 3, 1.0 / 3), "clip": True},
    {"sizes": (0.3,), "ratios": (2, 1), "steps": (0.1, 0.07), "offsets": (0.25, 0.75)},
    {"sizes": (0.1, 0.5, 0.9), "steps": (0.0625, 0.0625), "clip": True},
]


@pytest.mark.parametrize("params", PRIOR_CASES, ids=lambda p: ",".join(map(str, p.items())) or "-")
def test_multibox_prior(params):
    data = np.zeros((2, 3, 5, 7), np.float32)
    sym = mx.sym.contrib.MultiBoxPrior(mx.sym.var("data"), **params)
    _compare(sym, {"data": data})


def _detection_inputs(batch, classes, count, seed, ties=True):
    rng = np.random.RandomState(seed)
    logits = rng.uniform(-2, 2, (batch, classes, count))
    if ties:
        logits = np.round(logits, 0)  # equal classes and equal scores
    prob = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    anchors = mx.nd.contrib.MultiBoxPrior(
        mx.nd.zeros((1, 1, 3, count // 12)), sizes=(0.3, 0.5), ratios=(1, 2, 0.5)
    ).asnumpy()
    loc = rng.uniform(-1, 1, (batch, count * 4))
    return {
        "cls_prob": prob.astype(np.float32),
        "loc_pred": loc.astype(np.float32),
        "anchors": anchors,
    }


DETECTION_CASES = [
    {},
    {"threshold": 0.3},
    {"nms_threshold": 0.3, "force_suppress": True},
    {"nms_threshold": 0.45, "nms_topk": 8},
    {"nms_threshold": 0.6, "nms_topk": 50, "threshold": 0.2},
    {"nms_threshold": 0},  # no NMS: the rows in anchor order
    {"nms_threshold": 1.5},  # no NMS either
    {"clip": False, "variances": (0.2, 0.1, 0.3, 0.25)},
    {"background_id": 2},  # read by no MXNet 1.9.1 code
    {"threshold": 0.99},  # nothing kept
]


@pytest.mark.parametrize(
    "params", DETECTION_CASES, ids=lambda p: ",".join(map(str, p.items())) or "-"
)
def test_multibox_detection(params):
    feed = _detection_inputs(2, 4, 48, seed=len(params))
    sym = mx.sym.contrib.MultiBoxDetection(*[mx.sym.var(k) for k in feed], **params)
    # a box edge here may be an ulp or two from MXNet's (its float expf)
    _, (want,) = _compare(sym, feed, ulps=2)
    if params.get("threshold") != 0.99:
        assert (want[..., 0] >= 0).any()
    if params.get("threshold") != 0.99 and 0 < params.get("nms_threshold", 0.5) <= 1:
        assert (want[..., 0] == -1).any()  # suppressed


def _target_inputs(seed, batch=3, count=48, labels=5, classes=4):
    rng = np.random.RandomState(seed)
    anchors = mx.nd.contrib.MultiBoxPrior(
        mx.nd.zeros((1, 1, 3, count // 12)), sizes=(0.3, 0.5), ratios=(1, 2, 0.5)
    ).asnumpy()
    xy = rng.uniform(0, 0.6, (batch, labels, 2))
    wh = rng.uniform(0.1, 0.4, (batch, labels, 2))
    ids = rng.randint(0, classes - 1, (batch, labels, 1))
    label = np.concatenate([ids, xy, xy + wh, rng.uniform(0, 1, (batch, labels, 1))], -1)
    label[0, 3:] = -1  # two labels, then padding
    label[1, :] = -1  # none
    preds = np.round(rng.uniform(-2, 2, (batch, classes, count)), 1)  # ties
    return {
        "anchors": anchors,
        "labels": label.astype(np.float32),
        "cls_preds": preds.astype(np.float32),
    }


TARGET_CASES = [
    {},
    {"overlap_threshold": 0.3, "ignore_label": -2},
    {"overlap_threshold": 0},  # bipartite matches only
    {"negative_mining_ratio": 3, "negative_mining_thresh": 0.5},
    {"negative_mining_ratio": 2.5, "negative_mining_thresh": 0.3, "overlap_threshold": 0.4},
    {"negative_mining_ratio": 1, "overlap_threshold": 0, "minimum_negative_samples": 5},
    {"variances": (0.2, 0.2, 0.1, 0.1)},
]


@pytest.mark.parametrize("params", TARGET_CASES, ids=lambda p: ",".join(map(str, p.items())) or "-")
def test_multibox_target(params):
    feed = _target_inputs(seed=len(params))
    sym = mx.sym.contrib.MultiBoxTarget(*[mx.sym.var(k) for k in feed], **params)
    _, (_, mask, cls) = _compare(mx.sym.Group(list(sym)), feed, ulps=0)
    assert (mask > 0).any() and (cls == 0).any()  # positives and negatives
    assert (cls[1] == params.get("ignore_label", -1)).all()  # no labels: every anchor ignored


# --- Proposal / MultiProposal ---------------------------------------------------------------------


def _proposal_inputs(batch, anchors, height, width, stride, seed):
    rng = np.random.RandomState(seed)
    logits = np.round(rng.uniform(-3, 3, (batch, 2, anchors, height, width)), 1)  # ties
    prob = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    deltas = rng.uniform(-0.3, 0.3, (batch, 4 * anchors, height, width))
    # images a little smaller than the feature map: its last cells are past the image
    info = [[(height - 0.5) * stride, (width - 1.2) * stride, s] for s in (1.0, 0.6, 1.3)]
    return {
        "cls_prob": prob.reshape(batch, 2 * anchors, height, width).astype(np.float32),
        "bbox_pred": deltas.astype(np.float32),
        "im_info": np.array(info[:batch], np.float32),
    }


PROPOSAL_CASES = [
    {"rpn_pre_nms_top_n": 60, "rpn_post_nms_top_n": 20},
    {"rpn_pre_nms_top_n": 100, "rpn_post_nms_top_n": 40, "threshold": 0.5, "output_score": True},
    {"rpn_pre_nms_top_n": -1, "rpn_post_nms_top_n": 500, "rpn_min_size": 4},  # rows repeat
    {"rpn_pre_nms_top_n": 30, "rpn_post_nms_top_n": 50, "threshold": 0.9, "output_score": True},
    {"scales": (2, 4), "ratios": (0.5, 1, 2), "feature_stride": 8, "rpn_post_nms_top_n": 30},
    {"iou_loss": True, "rpn_post_nms_top_n": 25, "output_score": True, "rpn_min_size": 8},
]


@pytest.mark.parametrize("op", ["Proposal", "MultiProposal"])
@pytest.mark.parametrize("params", PROPOSAL_CASES, ids=lambda p: ",".join(map(str, p.items())))
def test_proposal(op, params):
    params = dict(params)
    count = len(params.get("scales", (4, 8, 16, 32))) * len(params.get("ratios", (0.5, 1, 2)))
    stride = params.get("feature_stride", 16)
    batch = 1 if op == "Proposal" else 3
    feed = _proposal_inputs(batch, count, 5, 6, stride, seed=len(params))
    sym = getattr(mx.sym.contrib, op)(*[mx.sym.var(k) for k in feed], **params)
    if params.get("output_score"):
        sym = mx.sym.Group(list(sym))
    # a box edge, a difference of large values, may be a few float32 ulps from MXNet's
    _, want = _compare(sym, feed, ulps=4)
    boxes = want[0][:, 1:]
    assert len(np.unique(boxes, axis=0)) > 1


def test_proposal_takes_one_image():
    import torch

    feed = _proposal_inputs(2, 12, 3, 4, 16, seed=0)
    sym = mx.sym.contrib.Proposal(*[mx.sym.var(k) for k in feed], rpn_post_nms_top_n=10)
    module = mxcompat.to_torch((sym, {}, {}), {k: v.shape for k, v in feed.items()}, verify=False)
    with pytest.raises(ValueError, match="one image"):
        module(*[torch.from_numpy(v) for v in feed.values()])


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,attrs,named",
    [
        ("_contrib_box_nms", {"in_format": "middle"}, "in_format=middle"),
        ("_contrib_box_non_maximum_suppression", {"out_format": "xywh"}, "out_format=xywh"),
        ("_contrib_box_decode", {"format": "2"}, "format=2"),
        ("_contrib_MultiBoxPrior", {"sizes": "(0.1, small)"}, "sizes="),
        ("_contrib_MultiBoxDetection", {"variances": "(a, b)"}, "variances="),
        ("_contrib_Proposal", {"scales": "(4, eight)"}, "scales="),
    ],
)
def test_values_mxnet_does_not_define_are_refused_by_name(op, attrs, named):
    # MXNet refuses these when it builds the symbol; a hand-edited symbol file still names
    # them: the converter refuses the node, naming the attribute, instead of guessing.
    from mxcompat.torch.expr import Var
    from mxcompat.torch.nodes import EMITTERS, Node, Unsupported

    node = Node(op, "det0", attrs, [Var("x%d" % i) for i in range(6)])
    with pytest.raises(Unsupported) as raised:
        EMITTERS[op](node)
    assert raised.value.op == op and named in raised.value.detail


def test_every_detection_operator_is_mapped():
    from mxcompat.torch.nodes import EMITTERS

    ops = [
        "_contrib_box_nms",
        "_contrib_box_non_maximum_suppression",
        "_contrib_box_encode",
        "_contrib_box_decode",
        "_contrib_ROIAlign",
        "ROIPooling",
        "_npx_roi_pooling",
        "_contrib_MultiBoxPrior",
        "_npx_multibox_prior",
        "_contrib_MultiBoxDetection",
        "_npx_multibox_detection",
        "_contrib_MultiBoxTarget",
        "_npx_multibox_target",
        "_contrib_Proposal",
        "_contrib_MultiProposal",
    ]
    for op in ops:
        assert EMITTERS[op].__module__ == "mxcompat.torch.detection", op


@pytest.mark.parametrize("squeeze", [False, True])
def test_split_into_one_part_is_one_array(squeeze):
    # GluonCV's Faster R-CNN splits its per-class boxes with num_outputs=1 before box_decode.
    x = np.random.RandomState(0).uniform(-1, 1, (1, 3, 4)).astype(np.float32)
    part = mx.sym.split(mx.sym.var("data"), num_outputs=1, axis=0, squeeze_axis=squeeze)
    _compare(part * 2, {"data": x})
