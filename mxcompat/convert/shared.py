"""What every way out of a symbol graph shares (``to_gluon``, ``to_onnx``, ``to_torch``, and the
``labels`` patch that reads a graph's losses): a node's attributes under the key its release
wrote, the loss heads, and the input shapes a model is given or already knows.  Imports no MXNet
at module level (``torch/codegen.py`` runs without it)."""

from ._common import _check_shape, _fail, _mx, _names

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
    if not isinstance(model, _mx().mod.Module) or not model.binded:
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
        raise _fail(
            where,
            "input_shapes is needed for %s (e.g. input_shapes=[(1, 3, 224, "
            "224)] or {'data': (1, 3, 224, 224)}); only a bound Module knows its own"
            % _names(inputs),
        )
    if isinstance(input_shapes, dict):
        missing = [n for n in inputs if n not in input_shapes]
        extra = [n for n in input_shapes if n not in inputs]
        if missing or extra:
            raise _fail(
                where,
                "input_shapes names %s, the model's inputs are %s"
                % (_names(input_shapes), _names(inputs)),
            )
        return [_check_shape(input_shapes[n], "input_shapes[%r]" % n, where) for n in inputs]
    if isinstance(input_shapes, (str, bytes)) or not isinstance(input_shapes, (list, tuple)):
        raise _fail(
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
        raise _fail(
            where,
            "%d input shape(s) given, the model has %d input(s): %s"
            % (len(shapes), len(inputs), _names(inputs)),
        )
    return shapes
