"""Patch ``frozen_statistics``: BatchNorm running statistics that the ``mxcompat.freeze``
registry matches hold still through training, on Module and Gluon.  Why around the backward,
and how: ``mxcompat/freeze/frozen_statistics.py``, whose wrappers this declares."""

from .._core.registry import Patch, Target, register
from ..freeze.frozen_statistics import (
    track_symbol_block,
    tracking_parameters,
    wrap_autograd_backward,
    wrap_executor_backward,
)

PATCH = "frozen_statistics"
register(
    Patch(
        PATCH,
        "BatchNorm running statistics matched by mxcompat.freeze stay bit for bit through "
        "training backwards (Module aux states, Gluon running_mean/running_var).",
        targets=[
            Target("mxnet.executor", "Executor.backward", wrap_executor_backward),
            Target("mxnet.gluon.parameter", "Parameter.__init__", proxy=tracking_parameters),
            Target("mxnet.gluon.block", "SymbolBlock.__init__", track_symbol_block),
            Target("mxnet.ndarray.ndarray", "NDArray.backward", wrap_autograd_backward),
            Target("mxnet.autograd", "backward", wrap_autograd_backward),
            Target("mxnet.autograd", "grad", wrap_autograd_backward),
        ],
    )
)
