"""The graphs of both sides: a module's symbol with its loss heads replaced by what they
compute at inference (or a loss head added for ``to_module(loss=...)``), a Gluon block's
graph and the parameters it uses, and which operator reads each parameter (to match two
graphs by structure).
"""

import functools
import json
import re

from .._core.conversion import fail, import_mxnet, quoted
from .shared import IDENTITY_HEADS, LOSS_HEADS, SIGMOID_HEADS, node_attrs

# to_module(loss=...): the head added so the module can fit.
_LOSSES = {
    "softmax": "SoftmaxOutput",
    "linear": "LinearRegressionOutput",
    "logistic": "LogisticRegressionOutput",
    "mae": "MAERegressionOutput",
    "svm": "SVMOutput",
}


# --- loss heads ---------------------------------------------------------------------------


def _truthy(value):
    return str(value).strip().lower() in ("true", "1")


@functools.lru_cache(maxsize=None)  # _softmax_output_flattens.cache_clear() asks again
def _softmax_output_flattens():
    """Whether ``SoftmaxOutput`` (no multi_output, no preserve_shape) normalises an N-d
    input over all its axes but the first (MXNet's CPU kernel), or over the last axis only
    (the MKLDNN kernel, used by the pip wheels from 1.7 unless MXNET_MKLDNN_ENABLED=0).
    Asked once of MXNet itself, on a 1x2x1x2 input: the build decides, not the version."""
    mx = import_mxnet()
    x = mx.nd.array([[[[0.0, 1.0]], [[2.0, 4.0]]]])
    first = mx.nd.SoftmaxOutput(x, mx.nd.zeros((1, 2, 1))).asnumpy()[0, 0, 0, 0]
    # flattened: e^0 / (e^0 + e^1 + e^2 + e^4) = 0.0152; last axis: 1 / (1 + e) = 0.269
    return bool(first < 0.1)


def _head_symbol(op, attrs, data, name):
    """What loss head ``op`` computes at inference, on symbol ``data``; ``name`` kept."""
    mx = import_mxnet()
    if op in IDENTITY_HEADS:
        # Their forward is the identity; a named copy keeps output names unique (1.3's
        # SymbolBlock looks its outputs up by name).
        return mx.sym.identity(data, name=name)
    if op in SIGMOID_HEADS:
        return mx.sym.sigmoid(data, name=name)
    if _truthy(attrs.get("multi_output", False)):
        return mx.sym.softmax(data, axis=1, name=name)
    if _truthy(attrs.get("preserve_shape", False)) or not _softmax_output_flattens():
        return mx.sym.softmax(data, axis=-1, name=name)
    # SoftmaxOutput flattens all but the first axis, normalises, keeps the shape.
    flat = mx.sym.Reshape(data, shape=(0, -1), name=name + "_flat")
    return mx.sym.reshape_like(
        mx.sym.softmax(flat, axis=-1, name=name + "_softmax"), data, name=name
    )


_HEAD_RE = re.compile(
    r'"op":\s*"(%s)",\s*"name":\s*"([^"\\]*)"(?:,\s*"attrs?":\s*(\{[^{}]*\}))?'
    % "|".join(LOSS_HEADS)
)


def _inference_symbol(symbol):
    """``symbol`` with every loss head replaced by what it computes at inference, so its
    outputs equal ``Module.predict``; ``symbol`` itself if it has no loss head.

    Loss heads are nearly always outputs: those are swapped through the Symbol API (a few
    nodes); parsing and reloading the whole graph is the fallback for any other place."""
    mx = import_mxnet()
    text = symbol.tojson()
    heads = {}
    # findall, not a finditer() loop (as freeze.registry._check_glob says why).
    for op, node, attrs in _HEAD_RE.findall(text):
        heads[node + "_output"] = (op, node, json.loads(attrs or "{}"))
    if not heads:
        return symbol
    outputs = symbol.list_outputs()
    if not all(name in outputs for name in heads):
        return _rewrite_graph(symbol, text)
    new, labels = [], set()
    for i, name in enumerate(outputs):
        out = symbol[i] if len(outputs) > 1 else symbol
        if name in heads:
            op, node, attrs = heads[name]
            children = out.get_children()
            labels.update(children.list_outputs()[1:])
            out = _head_symbol(op, attrs, children[0], node)
        new.append(out)
    result = new[0] if len(new) == 1 else mx.sym.Group(new)
    # A head also read inside the graph would still need its label: then rewrite it all.
    if labels.intersection(result.list_arguments()):
        return _rewrite_graph(symbol, text)
    return result


def _rewrite_graph(symbol, text):
    """``_inference_symbol`` for any graph: rewrite the JSON (loss heads anywhere)."""
    mx = import_mxnet()
    graph = json.loads(text)
    nodes = graph["nodes"]
    if not any(node["op"] in LOSS_HEADS for node in nodes):
        return symbol
    out_nodes = []
    target = {}  # old node index -> new node index, or a new entry (identity heads)

    def entry(old):
        new = target[old[0]]
        if isinstance(new, list):
            return list(new)
        return [new, old[1], old[2] if len(old) > 2 else 0]

    def emit(node):
        out_nodes.append(node)
        return len(out_nodes) - 1

    for i, node in enumerate(nodes):
        op = node["op"]
        if op not in LOSS_HEADS:
            node = dict(node)
            node["inputs"] = [entry(e) for e in node["inputs"]]
            target[i] = emit(node)
            continue
        data = entry(node["inputs"][0])
        attrs = node_attrs(node)
        name = node["name"]
        if op in IDENTITY_HEADS:
            target[i] = emit({"op": "_copy", "name": name, "inputs": [data]})
        elif op in SIGMOID_HEADS:
            target[i] = emit({"op": "sigmoid", "name": name, "inputs": [data]})
        elif _truthy(attrs.get("multi_output", False)):
            target[i] = emit(
                {"op": "softmax", "name": name, "attrs": {"axis": "1"}, "inputs": [data]}
            )
        elif _truthy(attrs.get("preserve_shape", False)) or not _softmax_output_flattens():
            target[i] = emit(
                {"op": "softmax", "name": name, "attrs": {"axis": "-1"}, "inputs": [data]}
            )
        else:
            # SoftmaxOutput flattens all but the first axis, normalises, keeps the shape.
            flat = emit(
                {
                    "op": "Reshape",
                    "name": name + "_flat",
                    "attrs": {"shape": "(0, -1)"},
                    "inputs": [data],
                }
            )
            soft = emit(
                {
                    "op": "softmax",
                    "name": name + "_softmax",
                    "attrs": {"axis": "-1"},
                    "inputs": [[flat, 0, 0]],
                }
            )
            target[i] = emit({"op": "reshape_like", "name": name, "inputs": [[soft, 0, 0], data]})
    heads = [entry(h) for h in graph["heads"]]

    # Keep what the heads reach (the label variables of the old heads go), renumbered.
    keep = [False] * len(out_nodes)
    for head in heads:
        keep[head[0]] = True
    for i in range(len(out_nodes) - 1, -1, -1):
        if keep[i]:
            for e in out_nodes[i]["inputs"]:
                keep[e[0]] = True
    index = {}
    kept = []
    for i, node in enumerate(out_nodes):
        if keep[i]:
            node["inputs"] = [[index[e[0]]] + list(e[1:]) for e in node["inputs"]]
            index[i] = len(kept)
            kept.append(node)
    new_graph = {
        "nodes": kept,
        "arg_nodes": [index[i] for i, n in enumerate(out_nodes) if keep[i] and n["op"] == "null"],
        "heads": [[index[h[0]]] + list(h[1:]) for h in heads],
    }
    if "attrs" in graph:
        new_graph["attrs"] = graph["attrs"]
    return mx.sym.load_json(json.dumps(new_graph))


def _module_inputs(module):
    return list(module.data_names) + list(getattr(module, "_state_names", None) or [])


def _module_inference_symbol(module, inputs, args):
    return _module_inference_graph(module, inputs, args)[0]


def _module_inference_graph(module, inputs, args):
    """(the module's symbol with loss heads replaced, that symbol's arguments that are not
    ``inputs``, in its order)."""
    symbol = module.symbol
    labels = set(module.label_names or ())
    names = getattr(module, "_param_names", None)
    if labels or names is None:
        names = [n for n in symbol.list_arguments() if n not in inputs]
    # Else Module.__init__ listed the symbol's arguments already: without labels, the ones
    # that are not inputs are its _param_names, in order (saves a list_arguments()).
    # A loss head always reads a label variable: no such argument, nothing to replace.
    for name in names:
        if name not in args or name in labels or name.endswith("label"):
            symbol = _inference_symbol(symbol)
            return symbol, [n for n in symbol.list_arguments() if n not in inputs]
    return symbol, list(names)


def _add_loss(out, loss, label_name, where):
    mx = import_mxnet()
    label = mx.sym.var(label_name)
    if callable(loss):
        return loss(out, label)
    if loss not in _LOSSES:
        raise fail(
            where,
            "loss=%r: expected one of %s or a callable (output, label) -> "
            "symbol" % (loss, quoted(sorted(_LOSSES))),
        )
    if len(out.list_outputs()) != 1:
        raise fail(
            where,
            "loss=%r needs a block with one output, this one has %d"
            % (loss, len(out.list_outputs())),
        )
    head = getattr(mx.sym, _LOSSES[loss])
    return head(out, label=label, name="softmax" if loss == "softmax" else loss + "_output")


# --- Gluon blocks -------------------------------------------------------------------------


def _block_graph(block, input_names, where):
    """(input names, output symbol) of ``block``: its cached graph if it has one, else the
    graph of calling it on symbol variables named ``input_names``."""
    mx = import_mxnet()
    cached = getattr(block, "_cached_graph", ())
    if cached:
        inputs, out = cached
        names = [s.name for s in inputs]
        if input_names is None or list(input_names) == names:
            return names, out
        if len(input_names) != len(names):
            raise fail(
                where,
                "the block's graph takes %d input(s) (%s), but %d name(s) were "
                "given (%s)" % (len(names), quoted(names), len(input_names), quoted(input_names)),
            )
        renamed = out(**{old: mx.sym.var(new) for old, new in zip(names, input_names)})
        return list(input_names), renamed
    names = list(input_names) if input_names is not None else ["data"]
    try:
        out = block(*[mx.sym.var(n) for n in names])
    except Exception as err:
        raise fail(
            where,
            "could not build the graph of %s by calling it on %d symbol "
            "input(s) (%s): %s: %s.  Pass one name per input of the block "
            "(data_names, label_names), or hybridize it and run one forward "
            "pass first."
            % (type(block).__name__, len(names), quoted(names), type(err).__name__, err),
        ) from None
    return names, _group(out)


def _block_params(block):
    """{name: Parameter} the block computes with."""
    if getattr(block, "_cached_op", None) is not None:
        # The cached op's own list: what the graph uses (incl. backend-added ones), and no
        # walk over the children.
        args = getattr(block, "_cached_op_args", None)
        if args:
            return {p.name: p for is_arg, p in args if not is_arg}
    return dict(block.collect_params().items())


def _flat_symbols(out):
    mx = import_mxnet()
    if isinstance(out, mx.sym.Symbol):
        return [out]
    flat = []
    for item in out:
        flat.extend(_flat_symbols(item))
    return flat


def _group(out):
    mx = import_mxnet()
    flat = _flat_symbols(out)
    return flat[0] if len(flat) == 1 else mx.sym.Group(flat)


# --- matching by structure ----------------------------------------------------------------


def _consumers(symbol):
    """{variable name: (op, input slot)} of the first operator reading each variable."""
    nodes = json.loads(symbol.tojson())["nodes"]
    found = {}
    for node in nodes:
        if node["op"] == "null":
            continue
        for slot, e in enumerate(node["inputs"]):
            source = nodes[e[0]]
            if source["op"] == "null" and source["name"] not in found:
                found[source["name"]] = (node["op"], slot)
    return found
