"""``mxcompat.to_onnx``: a Module, HybridBlock or symbol triple to an ``onnx.ModelProto``,
converted in memory by MXNet's own exporter (in the scope ``mxnet_exporter`` sets up)."""

from __future__ import annotations

import json
import sys

from .._core import facts
from .._core.conversion import check_flag, fail, import_mxnet, infer_shapes
from ..convert.model import model_graph
from ..convert.shared import known_shapes, shape_list
from .converters import own_converters, refusals
from .mxnet_exporter import (
    ConverterRefused,
    _converters,
    _exporting,
    _graph_class,
    _import_onnx,
    _import_onnxruntime,
    _onnx_name,
    _opsets,
)

# Names for annotations only: type checkers take this block as run, Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from typing import List, Sequence, Tuple, Union

    from mxnet.gluon import HybridBlock
    from mxnet.module import Module
    from mxnet.ndarray import NDArray
    from mxnet.symbol import Symbol
    from onnx import ModelProto

    # One input's shape, a list or tuple of ints; one per input in the model's order.
    Shape = Union[List[int], Tuple[int, ...]]
    Shapes = Sequence[Shape]


def _unconvertible(symbol, converters):
    """{op: [node names]} of the nodes MXNet's exporter has no converter for."""
    found = {}
    for node in json.loads(symbol.tojson())["nodes"]:
        if node["op"] not in converters:
            found.setdefault(node["op"], []).append(node["name"])
    return found


def _without_noop_reshape_like(symbol, shapes):
    """``symbol`` with each ``reshape_like`` whose input already has the shape made a copy.
    The SoftmaxOutput head of to_gluon (``convert.graph._head_symbol``) ends in one, which the
    exporter before 1.9 cannot convert; on a classifier's 2-d output it changes nothing."""
    mx = import_mxnet()
    graph = json.loads(symbol.tojson())
    nodes = graph["nodes"]
    if not any(n["op"] == "reshape_like" for n in nodes):
        return symbol
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shapes)
    shape_of = dict(zip(internals.list_outputs(), out_shapes))

    def entry_shape(e):
        node = nodes[e[0]]
        if node["op"] == "null":
            return shape_of.get(node["name"])
        outputs = [k for k in shape_of if k.startswith(node["name"] + "_output")]
        name = node["name"] + ("_output" if len(outputs) <= 1 else "_output%d" % e[1])
        return shape_of.get(name)

    changed = False
    for node in nodes:
        if (
            node["op"] == "reshape_like"
            and entry_shape(node["inputs"][0]) is not None
            and entry_shape(node["inputs"][0]) == entry_shape(node["inputs"][1])
        ):
            node["op"] = "_copy"
            node["inputs"] = node["inputs"][:1]
            node.pop("attrs", None)
            changed = True
    return mx.sym.load_json(json.dumps(graph)) if changed else symbol


def _describe_refusals(refused):
    shown = ["node %r (%s: %s)" % r for r in refused[:3]]
    if len(refused) > 3:
        shown.append("%d more" % (len(refused) - 3))
    return "; ".join(shown)


def _describe_missing(missing):
    parts = []
    for op, nodes in sorted(missing.items()):
        parts.append(
            "%r (%s)"
            % (
                op,
                "node %r" % nodes[0]
                if len(nodes) == 1
                else "%d nodes, the first %r" % (len(nodes), nodes[0]),
            )
        )
    return ", ".join(parts)


def _graph_proto(graph_class, symbol, params, shapes, opset):
    onnx = sys.modules["onnx"]
    float_type = onnx.TensorProto.FLOAT
    converter = graph_class()
    if facts.since(facts.MX_ONNX_PACKAGE):
        return converter.create_onnx_graph_proto(
            symbol, params, shapes, [float_type] * len(shapes), opset_version=opset, dynamic=False
        )
    if facts.since(facts.ONNX_EXPORT_OPSET_ARG):
        return converter.create_onnx_graph_proto(
            symbol, params, shapes, float_type, opset_version=opset
        )
    return converter.create_onnx_graph_proto(symbol, params, shapes, float_type)


def to_onnx(
    model: Module | HybridBlock | tuple[Symbol, dict[str, NDArray], dict[str, NDArray]],
    input_shapes: Shapes | dict[str, Shape] | Shape | None = None,
    path: str | os.PathLike[str] | None = None,
    opset: int | None = None,
    verify: bool = True,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> ModelProto:
    """``model`` as an ``onnx.ModelProto``, converted by MXNet's own exporter.

    ``model``: a ``Module`` (bound, or with parameters only, as from ``Module.load``), a
    ``HybridBlock`` with initialised parameters (hybridized and run, or callable on a symbol),
    or a ``(symbol, arg_params, aux_params)`` triple.  ``input_shapes``: one shape per input
    (a list in the model's input order, a dict by name, or one tuple); a bound Module's own
    are the default.  Inputs are float32.  Loss heads become their inference ops
    (``SoftmaxOutput`` -> softmax ...), as in ``to_gluon``; parameters are initializers only.
    ``opset``: default the newest this MXNet's exporter writes; others in its range.
    ``path``: also write the model there.  ``verify``: run the model in onnxruntime on a
    seeded random input and compare with MXNet's output (per output, ``|onnx - mxnet| <= atol
    + rtol * max|mxnet|``); a disagreement raises ``AssertionError`` with the largest difference
    and the first node whose output differs.  An operator the exporter cannot convert raises
    ``NotImplementedError`` naming it (and every other one), before anything is converted; so
    do, on MXNet 1.9, attribute values no converter takes (``converters.refusals``), and a
    converter's own refusal partway is named with its node.  On 1.9 some operators are
    converted by mxcompat's converters (``converters``); the outputs keep MXNet's order.
    """
    import numbers
    import os

    verify = check_flag(verify, "verify", "to_onnx")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
            raise fail(
                "to_onnx",
                "%s is a number >= 0, not %r" % (name, value),
                TypeError if not isinstance(value, numbers.Real) else ValueError,
            )
    if path is not None and not isinstance(path, (str, os.PathLike)):
        # onnx.save takes an int as a file descriptor: the model would go to that fd.
        raise fail(
            "to_onnx", "path is a file name (str or os.PathLike), not %r" % (path,), TypeError
        )
    if opset is not None and (isinstance(opset, bool) or not isinstance(opset, numbers.Integral)):
        raise fail("to_onnx", "opset is an int, not %r" % (opset,), TypeError)
    _import_onnx("mxcompat.to_onnx")
    if verify:
        _import_onnxruntime()
    mx = import_mxnet()
    symbol, arg_params, aux_params, inputs = model_graph(model, "to_onnx")
    params = {**arg_params, **aux_params}
    shapes = shape_list(input_shapes, inputs, known_shapes(model), "to_onnx")
    # MXNet's exporter infers shapes itself and fails inside (a TypeError on a None shape).
    infer_shapes(symbol, dict(zip(inputs, shapes)), "input shape(s)", "to_onnx")
    low, high = _opsets()
    if opset is None:
        opset = high
    elif not low <= opset <= high:
        raise fail(
            "to_onnx",
            "opset=%r: MXNet %s's exporter writes opset %s"
            % (opset, mx.__version__, low if low == high else "%d to %d" % (low, high)),
        )
    graph_class = _graph_class()
    converters = _converters(graph_class, opset)
    if "reshape_like" not in converters:
        symbol = _without_noop_reshape_like(symbol, dict(zip(inputs, shapes)))
    missing = _unconvertible(symbol, converters)
    if missing:
        raise fail(
            "to_onnx",
            "MXNet %s's ONNX exporter (opset %d) cannot convert operator%s %s"
            % (mx.__version__, opset, "s" if len(missing) > 1 else "", _describe_missing(missing)),
            NotImplementedError,
        )
    own = own_converters(symbol, dict(zip(inputs, shapes)))
    refused = refusals(symbol, own)
    if refused:
        raise _cannot_convert(refused, opset)
    try:
        with _exporting(opset, raw_weights=True, own=own) as onnx:
            graph = _graph_proto(graph_class, symbol, params, shapes, opset)
    except ConverterRefused as err:
        raise _cannot_convert([err.args], opset) from None
    model_proto = _model(onnx, graph, opset, [_onnx_name(n) for n in symbol.list_outputs()])
    if verify:
        from .verify import _verify  # onnxruntime's side: loaded when asked for

        _verify(model_proto, symbol, params, inputs, shapes, rtol, atol)
    if path is not None:
        onnx.save(model_proto, path)
    return model_proto


def _cannot_convert(refused, opset):
    return fail(
        "to_onnx",
        "MXNet %s's ONNX exporter (opset %d) cannot convert %s"
        % (import_mxnet().__version__, opset, _describe_refusals(refused)),
        NotImplementedError,
    )


def _model(onnx, graph, opset, output_names):
    helper = onnx.helper
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="mxnet+mxcompat"
    )
    finder = getattr(helper, "find_min_ir_version_for", None)
    if finder is not None:
        # The IR version of the opset, not of the installed onnx: onnxruntime releases
        # older than that onnx load it too.  At least 4: from IR 4 an initializer need not be
        # a graph input.
        model.ir_version = max(finder(list(model.opset_import)), 4)
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    del model.graph.input[:]
    model.graph.input.extend(graph_inputs)
    # MXNet's order of the outputs (1.9's exporter lists them in the order it converts their
    # nodes: an LSTM's states before the logits after it).
    outputs = {o.name: o for o in model.graph.output}
    if sorted(outputs) == sorted(output_names) and len(outputs) == len(output_names):
        ordered = [outputs[n] for n in output_names]
        del model.graph.output[:]
        model.graph.output.extend(ordered)
    # Initializers no node reads (an RNN's flat parameters, which our converter splits).
    read = {i for node in model.graph.node for i in node.input} | set(outputs)
    unread = [t for t in model.graph.initializer if t.name not in read]
    for tensor in unread:
        model.graph.initializer.remove(tensor)
    onnx.checker.check_model(model)
    return model
