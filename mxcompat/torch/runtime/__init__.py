"""MXNet's operators in PyTorch, with MXNet's semantics: what a converted model's code calls.

The code ``to_torch`` generates calls these as ``mxops.<name>`` where MXNet and PyTorch
differ (pooling conventions, BatchNorm's defaults and statistics, the loss heads' gradients,
``reshape``'s special codes, the fused ``RNN`` operator's packed parameters); where they agree
it calls ``torch``/``torch.nn.functional`` directly.  This package imports torch only (never
mxnet, nor the rest of mxcompat): ``mxcompat torch`` copies it beside the ``model.py`` it
writes, as ``mxnet_ops/``, so a converted model runs where neither is installed.
"""

import torch

from .anchors import multibox_detection, multibox_prior, multibox_target
from .attention import (
    arange_like,
    div_sqrt_dim,
    interleaved_matmul_encdec_qk,
    interleaved_matmul_encdec_valatt,
    interleaved_matmul_selfatt_qk,
    interleaved_matmul_selfatt_valatt,
)
from .boxes import box_decode, box_encode, box_nms
from .indexing import (
    argsort,
    gather_nd,
    mod,
    mod_scalar,
    one_hot,
    pick,
    scatter_nd,
    shape_array,
    size_array,
    slice_like,
    sort,
    topk,
)
from .layers import (
    BatchNorm,
    Embedding,
    activation,
    batch_norm,
    l2_normalization,
    layer_norm,
    leaky_relu,
)
from .losses import regression_output, softmax_output
from .norms import group_norm, layer_norm_moments
from .pooling import pooling
from .proposals import proposal
from .resize import (
    adaptive_avg_pool2d,
    bilinear_resize2d,
    upsampling_bilinear,
    upsampling_nearest,
)
from .rnn import rnn
from .rois import roi_align, roi_pooling
from .sequence import dropout, sequence_last, sequence_mask, sequence_reverse, softmax
from .shapes import flatten, reduce, reshape, slice_axis, split, unknown_zeros, where

__all__ = [
    "BatchNorm",
    "Embedding",
    "activation",
    "adaptive_avg_pool2d",
    "arange_like",
    "argsort",
    "batch_norm",
    "bilinear_resize2d",
    "box_decode",
    "box_encode",
    "box_nms",
    "div_sqrt_dim",
    "dropout",
    "flatten",
    "gather_nd",
    "group_norm",
    "interleaved_matmul_encdec_qk",
    "interleaved_matmul_encdec_valatt",
    "interleaved_matmul_selfatt_qk",
    "interleaved_matmul_selfatt_valatt",
    "l2_normalization",
    "layer_norm",
    "layer_norm_moments",
    "leaky_relu",
    "mod",
    "mod_scalar",
    "multibox_detection",
    "multibox_prior",
    "multibox_target",
    "one_hot",
    "pick",
    "pooling",
    "proposal",
    "reduce",
    "regression_output",
    "reshape",
    "rnn",
    "roi_align",
    "roi_pooling",
    "scatter_nd",
    "sequence_last",
    "sequence_mask",
    "sequence_reverse",
    "shape_array",
    "size_array",
    "slice_axis",
    "slice_like",
    "softmax",
    "softmax_output",
    "sort",
    "split",
    "topk",
    "unknown_zeros",
    "upsampling_bilinear",
    "upsampling_nearest",
    "where",
]

# torch.fx traces through the layers and records the functions as calls: their Python reads
# the input's shape, which a symbolic trace does not have.  Wrapped here, where the model's
# code looks them up (``mxops.pooling``).
for _name in __all__:
    if not isinstance(globals()[_name], type):
        torch.fx.wrap(_name)
