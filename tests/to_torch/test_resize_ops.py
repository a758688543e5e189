"""to_torch on MXNet's resizing operators, each parameter against MXNet's own executor in
the same run, with gradients: AdaptiveAvgPooling2D (MXNet's float32 bins, also where they are
not PyTorch's), BilinearResize2D (every mode, scales in float32, align_corners, a single
output row), UpSampling (nearest with several inputs, concatenated or summed; bilinear as
MXNet's deconvolution).  Values MXNet fails on are refused."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat._core import facts
from tests.support.torch_ops import data, run_both

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)

A, B = mx.sym.var("a"), mx.sym.var("b")
ADAPTIVE = mx.sym.contrib.AdaptiveAvgPooling2D
_ALIGN = facts.since(facts.BILINEAR_RESIZE_ALIGN_CORNERS)
not_aligned = pytest.mark.skipif(not _ALIGN, reason="align_corners=False from MXNet 1.7")
ALIGNS = [True, pytest.param(False, marks=not_aligned)]


def _resize(*args, **kw):
    # Before 1.7 MXNet has no align_corners and always aligns them (its default since).
    if not _ALIGN and kw.get("align_corners", True):
        kw.pop("align_corners", None)
    return mx.sym.contrib.BilinearResize2D(*args, **kw)


# --- AdaptiveAvgPooling2D ---------------------------------------------------------------------


@pytest.mark.parametrize("output_size", [None, 1, 3, (2, 3), (5, 7), (9, 11), (2, 3, 4)])
def test_adaptive_avg_pooling(output_size):
    options = {} if output_size is None else {"output_size": output_size}
    module = run_both(ADAPTIVE(A, **options), {"a": data(2, 3, 7, 9)})
    assert "mxops.adaptive_avg_pool2d" in module.code


def test_adaptive_avg_pooling_refuses_a_size_below_1():
    sym = ADAPTIVE(A, output_size=(0, 2))
    with pytest.raises(NotImplementedError, match="AdaptiveAvgPooling2D.*output_size=\\(0, 2\\)"):
        mxcompat.to_torch((sym, {}, {}), {"a": (1, 1, 4, 4)})


def test_adaptive_avg_pooling_bins_in_float32_where_they_are_not_pytorchs():
    import torch
    import torch.nn.functional as F

    x = data(1, 2, 4097, 1)
    run_both(ADAPTIVE(A, output_size=(4098, 1)), {"a": x})
    # PyTorch's integer bins differ from MXNet's float32 ones here.
    want = mx.nd.contrib.AdaptiveAvgPooling2D(mx.nd.array(x), output_size=(4098, 1))
    naive = F.adaptive_avg_pool2d(torch.from_numpy(x), (4098, 1)).numpy()
    assert np.abs(naive - want.asnumpy()).max() > 1e-3


# --- BilinearResize2D -------------------------------------------------------------------------


@pytest.mark.parametrize("align_corners", ALIGNS)
@pytest.mark.parametrize("size", [(10, 13), (3, 4), (1, 1), (1, 9), (5, 7), (12, 1)])
def test_bilinear_resize_to_a_size(size, align_corners):
    sym = _resize(A, height=size[0], width=size[1], align_corners=align_corners)
    module = run_both(sym, {"a": data(2, 3, 5, 7)}, exact=True)
    assert "mxops.bilinear_resize2d" in module.code


@not_aligned
def test_bilinear_resize_one_row_without_align_corners_reads_the_first_row():
    import torch
    import torch.nn.functional as F

    x = data(1, 1, 6, 4)
    run_both(_resize(A, height=1, width=4, align_corners=False), {"a": x})
    want = mx.nd.contrib.BilinearResize2D(mx.nd.array(x), height=1, width=4, align_corners=False)
    naive = F.interpolate(torch.from_numpy(x), (1, 4), mode="bilinear", align_corners=False)
    assert np.array_equal(want.asnumpy()[0, 0, 0], x[0, 0, 0])
    assert not np.allclose(naive.numpy(), want.asnumpy())


@pytest.mark.parametrize("align_corners", ALIGNS)
@pytest.mark.parametrize("scales", [(2.0, 2.0), (0.5, 1.5), (0.3, 0.7), (1.0, 1.0), (2.5, 0.2)])
def test_bilinear_resize_by_scales(scales, align_corners):
    sym = _resize(A, scale_height=scales[0], scale_width=scales[1], align_corners=align_corners)
    run_both(sym, {"a": data(1, 2, 10, 7)}, exact=True)


def test_bilinear_resize_scale_width_alone_is_ignored_as_mxnet_ignores_it():
    sym = _resize(A, height=3, width=4, scale_width=2.0)
    run_both(sym, {"a": data(1, 2, 5, 7)}, exact=True)


@pytest.mark.parametrize("mode", ["odd_scale", "size"])
def test_bilinear_resize_refuses_a_missing_scale_as_mxnet_fails(mode):
    sym = _resize(A, scale_height=2.0, mode=mode)
    with pytest.raises(NotImplementedError, match="'_contrib_BilinearResize2D'.*scale_width"):
        mxcompat.to_torch((sym, {}, {}), {"a": (1, 1, 4, 4)})


@pytest.mark.parametrize("shape", [(1, 2, 6, 8), (1, 2, 7, 9), (1, 2, 6, 9)])
@pytest.mark.parametrize("scales", [(2.0, 2.0), (0.5, 0.5), (3.0, 1.5)])
def test_bilinear_resize_odd_scale(shape, scales):
    sym = _resize(A, scale_height=scales[0], scale_width=scales[1], mode="odd_scale")
    run_both(sym, {"a": data(*shape)}, exact=True)


@pytest.mark.parametrize("mode", ["to_even_down", "to_even_up", "to_odd_down", "to_odd_up"])
@pytest.mark.parametrize("shape", [(1, 2, 6, 8), (1, 2, 7, 9), (2, 1, 6, 9)])
@pytest.mark.parametrize("align_corners", ALIGNS)
def test_bilinear_resize_to_even_or_odd(mode, shape, align_corners):
    sym = _resize(A, mode=mode, align_corners=align_corners)
    run_both(sym, {"a": data(*shape)}, exact=True)


@pytest.mark.parametrize("align_corners", ALIGNS)
def test_bilinear_resize_like_a_second_input(align_corners):
    sym = _resize(A, B, mode="like", align_corners=align_corners)
    run_both(sym, {"a": data(2, 3, 5, 6), "b": data(2, 1, 9, 4, seed=4)}, exact=True)


@pytest.mark.parametrize("align_corners", ALIGNS)
def test_bilinear_resize_in_float64(align_corners):
    sym = _resize(mx.sym.Cast(A, "float64"), height=9, width=4, align_corners=align_corners)
    run_both(sym, {"a": data(1, 2, 5, 7)}, exact=True)


# --- UpSampling -------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1, 2, 3])
def test_upsampling_nearest(scale):
    module = run_both(
        mx.sym.UpSampling(A, scale=scale, sample_type="nearest"), {"a": data(2, 3, 4, 5)}
    )
    assert "F.interpolate" in module.code


@pytest.mark.parametrize("mode", ["concat", "sum"])
def test_upsampling_nearest_several_inputs_to_the_firsts_size(mode):
    c = mx.sym.var("c")
    sym = mx.sym.UpSampling(
        A, B, c, scale=2, sample_type="nearest", num_args=3, multi_input_mode=mode
    )
    feed = {"a": data(2, 3, 4, 6), "b": data(2, 3, 2, 3, seed=4), "c": data(2, 3, 8, 12, seed=5)}
    module = run_both(sym, feed)
    assert "mxops.upsampling_nearest" in module.code


@pytest.mark.parametrize("scale", [2, 3, 4])
def test_upsampling_bilinear_is_mxnets_deconvolution(scale):
    w = mx.sym.var("w")
    sym = mx.sym.UpSampling(A, w, scale=scale, sample_type="bilinear", num_filter=3, num_args=2)
    k = 2 * scale - scale % 2
    feed = {"a": data(2, 3, 4, 5), "w": data(3, 1, k, k, seed=6)}
    module = run_both(sym, feed, rtol=1e-4)
    assert "mxops.upsampling_bilinear" in module.code


def test_adaptive_avg_pooling_in_float16_sums_in_float16_as_mxnet():
    sym = ADAPTIVE(mx.sym.Cast(A, "float16"), output_size=(2, 3))
    run_both(sym, {"a": data(2, 3, 7, 9)}, exact=True, grad=False)
    run_both(sym, {"a": data(2, 3, 7, 9)}, rtol=2e-3)


def test_bilinear_resize_in_float16():
    sym = _resize(mx.sym.Cast(A, "float16"), height=9, width=4)
    run_both(sym, {"a": data(1, 2, 5, 7)}, rtol=2e-3)
