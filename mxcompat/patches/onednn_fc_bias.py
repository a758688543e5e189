"""Patch ``onednn_fc_bias``: ``fixed_param_names=['fc1_weight']`` fixes the weight only, its
FullyConnected bias trains, on the oneDNN builds from MXNet 1.7.  What MXNet does there and how
the weight is held: ``mxcompat/freeze/onednn_fc_bias.py`` (``mxcompat.freeze`` uses the same
rule), whose wrappers this declares."""

from .._core import facts
from .._core.registry import Patch, Target, register
from ..freeze.onednn_fc_bias import PATCH, wrap_bind, wrap_reshape

# MKLDNN builds only (when=has_mkldnn).
register(
    Patch(
        PATCH,
        "fixed_param_names keeps an FC weight fixed without stopping its bias (oneDNN builds, "
        "MXNet >= 1.7, CPU contexts).",
        when=facts.has_mkldnn,
        targets=[
            Target("mxnet.module.module", "Module.bind", wrap_bind),
            Target("mxnet.module.module", "Module.reshape", wrap_reshape),
        ],
        since=facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS,
    )
)
