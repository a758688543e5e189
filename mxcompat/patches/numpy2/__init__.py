"""MXNet's Python layer on NumPy 2's new behaviour (user manual: docs/guide/numpy2.md);
applied only on NumPy 2.  One patch, ``numpy2``, with
one module per NumPy change (each says where its fix sits, and why):

* ``nep51``: NEP 51 scalar reprs (``np.int64(2)``) in the operator parameters MXNet writes
  with ``str()``;
* ``nep50``: NEP 50 promotion in metric sums and 1.3.1's ``clip_global_norm``;
* ``tostring``: ``ndarray.tostring`` (gone in 2.3) in ``recordio.pack``/``pack_img``;
* ``while_loop``: ``int()`` of a 1-element array (refused from 2.4) for ``while_loop``'s
  ``max_iterations``, and the verdict on every other place MXNet makes a Python scalar.

The other removals of NumPy 2.3-2.5 reach no MXNet code (an ``ast`` scan of 1.3.1 … 1.9.1 for
each): ``np.reshape(newshape=)`` (only ``mx.np``'s own operator has that keyword),
``np.sum(generator)`` (none), ``np.nonzero`` of a 0-d array (``broadcast_to``: 1-d only),
``np.array(copy=False)`` (none; ``astype(copy=False)`` is MXNet's own or allowed),
``np.fromstring`` (none), setting ``ndarray.shape``/``strides`` (only MXNet and ctypes
objects), ``np.core`` (``moveaxis``: still works, with NumPy's ``DeprecationWarning``).

NumPy's own settings (print options, promotion state) are never touched.  The patch applies
only on NumPy 2 (on NumPy 1 nothing is wrapped).
"""

import sys

from ..._core import facts
from ..._core.registry import Patch, Target, register
from . import _state, nep50, nep51, tostring, while_loop
from ._state import PATCH
from .nep51 import legacy_str

__all__ = ["PATCH", "legacy_str"]


def _numpy2():
    """Whether the installed NumPy is 2.0 or newer."""
    return facts.numpy_since(facts.NUMPY_2)


def _on_apply():
    _state.np = sys.modules.get("numpy")
    _state.on = _numpy2()
    _state.tostring = tostring._tostring_class(_state.np)
    _state.one_element = facts.numpy_since(facts.NUMPY_REFUSES_SCALAR_OF_1_ELEMENT_ARRAY)


def _on_remove():
    _state.on = False


_IO_ITERATORS = (
    "CSVIter",
    "ImageDetRecordIter",
    "ImageRecordInt8Iter",
    "ImageRecordIter",
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter",
    "ImageRecordUInt8Iter_v1",
    "LibSVMIter",
    "MNISTIter",
)

# Metric classes (present in 1.3.1 … 1.9.1) whose own reset / reset_local set the sums:
# reset_local appears in 1.4, PearsonCorrelation.reset in 1.6 (before, the inherited one is
# wrapped on the subclass, harmlessly).  PCC (1.5+) computes its sums as properties.
_METRIC_RESETS = [
    ("EvalMetric", "reset"),
    ("EvalMetric", "reset_local"),
    ("F1", "reset"),
    ("F1", "reset_local"),
    ("MCC", "reset"),
    ("MCC", "reset_local"),
    ("PearsonCorrelation", "reset"),
]


def _targets():
    invoke, create = nep51._invoke_proxy, nep51._creator_proxy
    targets = [
        # Every namespace that holds the function the generated operators call.
        Target("mxnet._ctypes.ndarray", "_imperative_invoke", proxy=invoke),
        Target("mxnet.ndarray._internal", "_imperative_invoke", proxy=invoke),
        Target("mxnet.ndarray.register", "_imperative_invoke", proxy=invoke),
        Target("mxnet._ctypes.symbol", "_symbol_creator", proxy=create),
        Target("mxnet.symbol._internal", "_symbol_creator", proxy=create),
        Target("mxnet.symbol.register", "_symbol_creator", proxy=create),
        Target("mxnet._ctypes.ndarray", "CachedOp.__init__", nep51._wrap_cached_op_init),
        Target("mxnet.symbol.symbol", "var", nep51._wrap_var),
        Target("mxnet.symbol.symbol", "Variable", nep51._wrap_var),
        Target("mxnet.symbol", "var", nep51._wrap_var),
        Target("mxnet.symbol", "Variable", nep51._wrap_var),
        Target("mxnet.gluon.utils", "clip_global_norm", nep50._wrap_clip_global_norm),
        Target("mxnet.recordio", "pack", tostring._wrap_pack),
        Target("mxnet.recordio", "pack_img", tostring._wrap_pack_img),
        Target("mxnet.ndarray.contrib", "while_loop", while_loop._wrap_while_loop),
        Target("mxnet.symbol.contrib", "while_loop", while_loop._wrap_while_loop),
    ]
    # io.py up to 1.3, the io package (io/io.py, re-exported by io/__init__) from 1.4.
    for module in ("mxnet.io", "mxnet.io.io"):
        for name in _IO_ITERATORS:
            targets.append(Target(module, name, nep51._wrap_kwargs_values, optional=True))
    for cls, method in _METRIC_RESETS:
        targets.append(
            Target("mxnet.metric", "%s.%s" % (cls, method), nep50._wrap_metric_reset, optional=True)
        )
    return targets


# On NumPy 2 only (when=_numpy2): on NumPy 1 nothing is wrapped.
register(
    Patch(
        PATCH,
        "MXNet's Python layer on NumPy 2: NumPy 1 scalar reprs in operator "
        "parameters (NEP 51), NumPy 1 promotion in metric sums (NEP 50), "
        "tobytes for the removed ndarray.tostring, while_loop's "
        "max_iterations as a 1-element array (NumPy >= 2.4).",
        targets=_targets(),
        on_apply=_on_apply,
        on_remove=_on_remove,
        when=_numpy2,
    )
)
