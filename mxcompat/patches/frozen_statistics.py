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
from ..freeze.hot_path import statistics_armed

PATCH = "frozen_statistics"
register(
    Patch(
        PATCH,
        "BatchNorm running statistics matched by mxcompat.freeze stay bit for bit through "
        "training backwards (Module aux states, Gluon running_mean/running_var).",
        # The backwards (hot) only while something is frozen; the constructors always, so
        # that a statistic built before a freeze is known.
        armed=statistics_armed,
        targets=[
            Target("mxnet.executor", "Executor.backward", wrap_executor_backward, hot=True),
            Target("mxnet.gluon.parameter", "Parameter.__init__", proxy=tracking_parameters),
            Target("mxnet.gluon.block", "SymbolBlock.__init__", track_symbol_block),
            Target("mxnet.ndarray.ndarray", "NDArray.backward", wrap_autograd_backward, hot=True),
            Target("mxnet.autograd", "backward", wrap_autograd_backward, hot=True),
            Target("mxnet.autograd", "grad", wrap_autograd_backward, hot=True),
        ],
    )
)
