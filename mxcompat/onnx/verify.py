"""``to_onnx(verify=True)``: the exported model run in onnxruntime against MXNet, and where
they part.  Loaded at the first verification only."""

import json
import sys

from .._core.conversion import import_mxnet
from ..convert.shared import no_subgraph_backend, worst_difference
from .mxnet_exporter import _import_onnxruntime, _onnx_name


def _mxnet_outputs(symbol, params, feed):
    mx = import_mxnet()
    executor = symbol.simple_bind(
        mx.cpu(), grad_req="null", **{n: v.shape for n, v in feed.items()}
    )
    for arrays in (executor.arg_dict, executor.aux_dict):
        for name, array in arrays.items():
            array[:] = feed[name] if name in feed else params[name]
    return [o.asnumpy() for o in executor.forward(is_train=False)]


def _onnx_outputs(model, feed):
    ort = _import_onnxruntime()
    options = ort.SessionOptions()
    options.log_severity_level = 4  # its errors are raised; printed too, they would repeat
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return names, session.run(None, feed)


def _verify(model, symbol, params, inputs, shapes, rtol, atol):
    import numpy as np

    rng = np.random.RandomState(0)
    feed = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in zip(inputs, shapes)}
    expected = _mxnet_outputs(symbol, params, feed)
    try:
        names, actual = _onnx_outputs(model, feed)
    except Exception as err:
        # onnxruntime's own exception types differ between its releases.
        raise AssertionError(
            "mxcompat.to_onnx: onnxruntime %s cannot run the model MXNet %s's exporter wrote "
            "(opset %d): %s"
            % (
                sys.modules["onnxruntime"].__version__,
                import_mxnet().__version__,
                model.opset_import[0].version,
                str(err).strip(),
            )
        ) from None
    by_name = dict(zip(names, actual))
    mx_names = symbol.list_outputs()
    if len(names) == 1 and len(mx_names) == 1:
        pairs = [(mx_names[0], expected[0], actual[0])]
    else:
        # By name: MXNet's exporter may list them in another order (to_onnx puts them back).
        pairs = [
            (n, e, by_name.get(_onnx_name(n), by_name.get(n))) for n, e in zip(mx_names, expected)
        ]
    unmatched = [n for n, _, a in pairs if a is None]
    if unmatched:
        raise AssertionError(
            "mxcompat.to_onnx: the ONNX model has no output for MXNet's %s (its outputs: %s)"
            % (", ".join(unmatched), ", ".join(names))
        )
    failures = []
    for name, e, a in pairs:
        worst, bad = worst_difference(e, a, rtol, atol)
        if bad:
            failures.append((name, worst))
    if failures:
        where = _first_difference(model, symbol, params, feed, rtol, atol)
        if where is None:
            # Every operator's output, the model's own outputs among them, agrees with MXNet
            # run without its oneDNN fused subgraphs: the fused kernels' rounding decided a
            # near-tie (a ranking, a comparison, a suppression) the other way.  Said, not
            # hidden: on such inputs the outputs part from the fused MXNet's.
            from .._core.log import warn

            warn(
                "mxcompat.to_onnx: onnxruntime's output differs from MXNet's beyond atol=%g, "
                "rtol=%g (%s), yet every node, the outputs included, agrees with MXNet run "
                "without its oneDNN fused kernels: their rounding decided a near-tie the other "
                "way" % (atol, rtol, ", ".join("%s: largest difference %.3g" % f for f in failures))
            )
            return
        raise AssertionError(
            "mxcompat.to_onnx: onnxruntime's output differs from MXNet's beyond "
            "atol=%g, rtol=%g: %s; %s"
            % (atol, rtol, ", ".join("%s: largest difference %.3g" % f for f in failures), where)
        )


# Operators whose output jumps where their inputs cross (comparisons, rankings, rounding): the
# first node to differ being one, with inputs that agree, is a tie decided two ways.
_DECISIONS = {
    "broadcast_equal",
    "broadcast_not_equal",
    "broadcast_greater",
    "broadcast_greater_equal",
    "broadcast_lesser",
    "broadcast_lesser_equal",
    "_equal",
    "_not_equal",
    "_greater",
    "_greater_equal",
    "_lesser",
    "_lesser_equal",
    "_equal_scalar",
    "_not_equal_scalar",
    "_greater_scalar",
    "_greater_equal_scalar",
    "_lesser_scalar",
    "_lesser_equal_scalar",
    "topk",
    "argmax",
    "argmin",
    "argsort",
    "sort",
    "round",
    "rint",
    "floor",
    "ceil",
    "fix",
    "_contrib_box_nms",
}


def _inputs_compared(node_name, nodes, internals, mx_names, compared):
    """Whether every input of node ``node_name`` is a variable or an output compared before."""
    entries = {}  # (node index, output index) -> internals' output name
    position = -1
    last = None
    count = 0
    for i, out in enumerate(mx_names):
        name = internals[i].name
        if name != last:
            position, last, count = position + 1, name, 0
        entries[position, count] = out
        count += 1
    for node in nodes:
        if node["name"] != node_name:
            continue
        for src, index in (e[:2] for e in node["inputs"]):
            if nodes[src]["op"] != "null" and entries.get((src, index)) not in compared:
                return False
        return True
    return False


def _first_difference(model, symbol, params, feed, rtol, atol):
    """Which node's output first differs, in MXNet's order, comparing every intermediate
    output MXNet (without oneDNN's fused subgraphs) and the ONNX graph both name; None when
    they all agree and the model's outputs were among them."""
    onnx = sys.modules["onnx"]
    internals = symbol.get_internals()
    mx_names = internals.list_outputs()
    produced = set()
    for node in model.graph.node:
        produced.update(node.output)
    variables = set(symbol.list_inputs())
    wanted = [n for n in mx_names if n not in variables and _onnx_name(n) in produced]
    if not wanted:
        return "no intermediate output could be compared"
    probe = type(model)()
    probe.CopyFrom(model)
    existing = {o.name for o in probe.graph.output}
    for name in wanted:
        if _onnx_name(name) not in existing:
            probe.graph.output.append(onnx.helper.make_empty_tensor_value_info(_onnx_name(name)))
    try:
        # Only the operators' outputs: a Group of the internals with their variables
        # cannot be bound on every release.
        probe_symbol = import_mxnet().sym.Group([internals[mx_names.index(n)] for n in wanted])
        with no_subgraph_backend():
            expected = dict(zip(wanted, _mxnet_outputs(probe_symbol, params, feed)))
        names, actual = _onnx_outputs(probe, feed)
    except Exception as err:
        return "the intermediate outputs could not be compared (%s: %s)" % (type(err).__name__, err)
    got = dict(zip(names, actual))
    nodes = json.loads(symbol.tojson())["nodes"]
    ops = {n["name"]: n["op"] for n in nodes}
    for name in wanted:
        worst, bad = worst_difference(expected[name], got[_onnx_name(name)], rtol, atol)
        if bad:
            node = internals[mx_names.index(name)].name
            op = ops.get(node, "?")
            found = "the first node that differs is %r (%s), largest difference %.3g" % (
                node,
                op,
                worst,
            )
            if op in _DECISIONS and _inputs_compared(node, nodes, internals, mx_names, wanted):
                found += (
                    ": a comparison, ranking or rounding of inputs that agree within the "
                    "tolerance, so values within rounding of each other (ties, as a randomly "
                    "initialised network's saturated outputs have) were decided two ways"
                )
            return found
    if set(symbol.list_outputs()) <= set(wanted):
        return None
    return "no intermediate output differs"
