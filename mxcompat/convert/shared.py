"""What every way out of a symbol graph shares (``to_gluon``, ``to_onnx``, ``to_torch``, and the
``labels`` patch that reads a graph's losses): a node's attributes under the key its release
wrote, the loss heads, and the input shapes a model is given or already knows.  Imports no MXNet
at module level (``torch/codegen.py`` runs without it)."""

import contextlib
import os

from .._core import facts
from .._core.conversion import fail, import_mxnet, quoted
from .._core.scope import SharedScope
from ._common import _check_shape

# Loss heads, the operators a Module ends in that need a label at training, grouped by what
# they compute at inference (Module.predict).  "Softmax" is the pre-1.0 name of SoftmaxOutput,
# still written into JSON by 1.3.1.
SOFTMAX_HEADS = ("SoftmaxOutput", "Softmax")
SIGMOID_HEADS = ("LogisticRegressionOutput",)
IDENTITY_HEADS = ("LinearRegressionOutput", "MAERegressionOutput", "SVMOutput")
LOSS_HEADS = SOFTMAX_HEADS + SIGMOID_HEADS + IDENTITY_HEADS


def node_attrs(node):
    """The attributes of a node of ``Symbol.tojson()``: "attrs" from 1.0, "attr" before (and in
    older files), "param" in the oldest; ``{}`` for a node without any."""
    return node.get("attrs") or node.get("attr") or node.get("param") or {}


def known_shapes(model):
    """The input shapes a bound Module knows: ``{name: shape}`` (``{}`` for anything else)."""
    if not isinstance(model, import_mxnet().mod.Module) or not model.binded:
        return {}
    return {
        d.name if hasattr(d, "name") else d[0]: d.shape if hasattr(d, "shape") else d[1]
        for d in model.data_shapes
    }


def shape_list(input_shapes, inputs, known, where):
    """One shape per name of ``inputs``, from a dict, a list (in order) or one tuple; from
    ``known`` (``known_shapes``) when ``input_shapes`` is None.  ``where``: the public function
    whose error it is."""
    if input_shapes is None:
        if all(n in known for n in inputs):
            return [tuple(known[n]) for n in inputs]
        raise fail(
            where,
            "input_shapes is needed for %s (e.g. input_shapes=[(1, 3, 224, "
            "224)] or {'data': (1, 3, 224, 224)}); only a bound Module knows its own"
            % quoted(inputs),
        )
    if isinstance(input_shapes, dict):
        missing = [n for n in inputs if n not in input_shapes]
        extra = [n for n in input_shapes if n not in inputs]
        if missing or extra:
            raise fail(
                where,
                "input_shapes names %s, the model's inputs are %s"
                % (quoted(input_shapes), quoted(inputs)),
            )
        return [_check_shape(input_shapes[n], "input_shapes[%r]" % n, where) for n in inputs]
    if isinstance(input_shapes, (str, bytes)) or not isinstance(input_shapes, (list, tuple)):
        raise fail(
            where,
            "input_shapes is a list of shapes, a dict of them by input name "
            "or one shape, e.g. [(1, 3, 224, 224)], not %r" % (input_shapes,),
            TypeError,
        )
    shapes = list(input_shapes)
    if shapes and all(isinstance(s, int) for s in shapes):
        shapes = [shapes]

    def shape_of(s):
        if getattr(s, "shape", None) is not None:
            return s.shape
        if isinstance(s, (list, tuple)) and len(s) == 2 and isinstance(s[0], str):
            return s[1]  # a (name, shape) pair, as in data_shapes
        return s

    shapes = [
        _check_shape(shape_of(s), "input_shapes[%d]" % i, where) for i, s in enumerate(shapes)
    ]
    if len(shapes) != len(inputs):
        raise fail(
            where,
            "%d input shape(s) given, the model has %d input(s): %s"
            % (len(shapes), len(inputs), quoted(inputs)),
        )
    return shapes


def worst_difference(expected, actual, rtol, atol):
    """(largest |difference|, whether it is beyond ``atol + rtol * max|expected|``) of two
    NumPy arrays of one output.  Relative to the output's largest value: float32 sums in
    another order differ by a few ulps of the large terms, which may show in a small element.
    A NaN on one side only is a difference; a shape mismatch is an infinite one."""
    import numpy as np

    if expected.shape != actual.shape:
        return float("inf"), True
    if not expected.size:
        return 0.0, False
    expected = expected.astype(np.float64)
    actual = actual.astype(np.float64)
    diff = np.abs(actual - expected)
    worst = float(np.nanmax(diff)) if not np.isnan(diff).all() else float("nan")
    nan_mismatch = bool((np.isnan(actual) != np.isnan(expected)).any())
    return worst, nan_mismatch or worst > atol + rtol * float(np.nanmax(np.abs(expected)))


def _subgraph_backend_none():
    saved = os.environ.get("MXNET_SUBGRAPH_BACKEND")
    os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"

    def undo():
        if saved is None:
            os.environ.pop("MXNET_SUBGRAPH_BACKEND", None)
        else:
            os.environ["MXNET_SUBGRAPH_BACKEND"] = saved

    return undo


# Process-wide (os.environ), so counted across threads: two verifications overlapping out of
# order must not leave it set for good.
_subgraph_off = SharedScope(_subgraph_backend_none)


@contextlib.contextmanager
def no_subgraph_backend():
    """MXNet's oneDNN builds partition a graph into fused subgraphs at bind (a convolution with
    the activation after it): the fused node's inner outputs are then not the operators' own,
    and one whose inner outputs are all graph outputs fails to bind ("in_arg_ctx_map").  MXNet
    reads MXNET_SUBGRAPH_BACKEND at each bind: off for the binds inside."""
    if not facts.has_mkldnn():  # without oneDNN nothing is partitioned (and 1.5 refuses NONE)
        yield
        return
    with _subgraph_off:
        yield
