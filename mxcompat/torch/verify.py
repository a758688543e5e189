"""``to_torch(verify=True)``: every node of the converted module against MXNet's, on one seeded
random input, in eval mode; the first node that differs is named.  MXNet's outputs come from
the source (``sources``): its symbol here, or a checkpoint's files in another Python."""

from __future__ import annotations

import linecache
import traceback
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._core.conversion import fail, import_mxnet, quoted
from ..convert.shared import no_subgraph_backend, worst_difference
from .nodes import _bool, sort_indices

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .tree import Graph, Written

    # convert.record: {node: output(s)} of one forward of (module, written, feed, forced).
    Record = Callable[
        [Any, Written, Mapping[str, np.ndarray], Mapping[str, Sequence[np.ndarray]] | None],
        dict[str, Any],
    ]


def types(graph: Graph, params: Mapping[str, Any]) -> dict[str, np.dtype[Any]]:
    """{input name: numpy dtype}: the parameters' and states' own; the data inputs' the one type
    other than float32 among the parameters' where there is one (a Gluon net cast to float64, or
    to float16 with its BatchNorm kept in float32: MXNet refuses an input of another type), else
    float32."""
    arguments = [n["name"] for n in graph.nodes if n["op"] == "null" and n["name"] not in graph.aux]
    given = {n: np.dtype(params[n].dtype) for n in arguments if n in params}
    other = set(given.values()) - {np.dtype(np.float32)}
    default = other.pop() if len(other) == 1 else np.dtype(np.float32)
    found = {n: given.get(n, default) for n in arguments}
    # The states too, in their own types: an exported symbol's variables may still say float32
    # (``__dtype__``) of a net cast to float64 after they were made.
    found.update((n, np.dtype(params[n].dtype)) for n in graph.aux if n in params)
    for node in graph.nodes:  # softmax's lengths: MXNet takes integers only
        if "softmax" in node["op"] and _bool(node["attrs"].get("use_length")):
            source = graph.nodes[node["inputs"][1][0]]
            if source["name"] in found and source["name"] not in given:
                found[source["name"]] = np.dtype(np.int32)
    return found


def feed(
    graph: Graph, shapes: Mapping[str, tuple[int, ...]], types: Mapping[str, np.dtype[Any]]
) -> dict[str, np.ndarray]:
    """A seeded random input per data input in its type (float32 where none is): uniform in
    [-1, 1), or valid indices where it feeds an Embedding (its input_dim) directly."""
    rng = np.random.RandomState(0)
    nodes = graph.nodes
    index_range: dict[str, int] = {}
    for node in nodes:
        if node["op"] == "Embedding":
            source = nodes[node["inputs"][0][0]]
            if source["op"] == "null":
                index_range[source["name"]] = int(node["attrs"]["input_dim"])
    lengths = _length_inputs(nodes, shapes)
    values: dict[str, np.ndarray] = {}
    for name, shape in shapes.items():
        value: np.ndarray
        if name in index_range:
            value = rng.randint(0, index_range[name], shape)
        elif name in lengths:
            value = rng.randint(1, lengths[name] + 1, shape)
        else:
            value = rng.uniform(-1, 1, shape)
        values[name] = value.astype(types.get(name, np.float32))
    return values


def _length_inputs(
    nodes: Sequence[dict[str, Any]], shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, int]:
    """{input: steps} of the inputs that are a sequence's lengths (``SequenceMask``'s,
    ``softmax``'s ``use_length``): they get whole numbers in [1, steps] (the steps along the
    node's axis where its data is an input, else 1), as MXNet reads outside the array for
    others."""
    found: dict[str, int] = {}
    for node in nodes:
        attrs, inputs = node["attrs"], node["inputs"]
        flags = (attrs.get("use_sequence_length"), attrs.get("use_length"))
        if len(inputs) < 2 or not any(_bool(f) for f in flags):
            continue
        source, data = nodes[inputs[1][0]], nodes[inputs[0][0]]
        if source["op"] != "null":
            continue
        shape = shapes.get(data["name"]) if data["op"] == "null" else None
        axis = int(attrs.get("axis", -1 if "softmax" in node["op"] else 0))
        found[source["name"]] = max(int(shape[axis]), 1) if shape else 1
    return found


def mxnet_outputs(
    symbol: Any,
    params: Mapping[str, Any],
    feed: Mapping[str, np.ndarray],
    types: Mapping[str, np.dtype[Any]],
) -> list[tuple[str, np.ndarray]]:
    """[(output name, array)] of every internal output of ``symbol``, in node order."""
    mx = import_mxnet()
    every = symbol.get_internals()
    variables = set(symbol.list_arguments()) | set(symbol.list_auxiliary_states())
    names = [n for n in every.list_outputs() if n not in variables]
    # Variables as outputs make the executor refuse to bind: the operators' outputs only.
    internals = mx.sym.Group([every[n] for n in names])
    arg_shapes, _, aux_shapes = internals.infer_shape_partial(
        **{n: v.shape for n, v in feed.items()}
    )
    shapes = dict(zip(internals.list_arguments(), arg_shapes))
    shapes.update(zip(internals.list_auxiliary_states(), aux_shapes))
    unknown = [n for n, s in shapes.items() if n not in params and (not s or 0 in s)]
    if unknown:
        raise fail("to_torch", "cannot infer the shape of %s from input_shapes" % quoted(unknown))
    with no_subgraph_backend():
        executor = internals.simple_bind(
            mx.cpu(),
            grad_req="null",
            type_dict={n: t for n, t in types.items() if n in internals.list_inputs()},
            **{n: s for n, s in shapes.items() if n in internals.list_arguments()},
        )
    for arrays in (executor.arg_dict, executor.aux_dict):
        for name, array in arrays.items():
            if name in feed:
                array[:] = feed[name]
            elif name in params:
                array[:] = params[name]
            else:
                array[:] = 0  # a label: the loss heads' forward does not read it
    outputs = executor.forward(is_train=False)
    return list(zip(internals.list_outputs(), [o.asnumpy() for o in outputs]))


def recorded(
    module: Any,
    written: Written,
    feed: Mapping[str, np.ndarray],
    record: Record,
    forced: Mapping[str, Sequence[np.ndarray]] | None = None,
) -> dict[str, Any]:
    """{node: output(s)} of one forward of ``module`` in eval mode on ``feed`` (``forced``:
    each node fed MXNet's outputs of the nodes before it, see ``convert.record``)."""
    was_training = module.training
    module.eval()
    try:
        return record(module, written, feed, forced)
    finally:
        module.train(was_training)


def run_once(
    module: Any,
    written: Written,
    feed: Mapping[str, np.ndarray],
    record: Record,
    prefix: str,
    params_file: str,
) -> dict[str, Any]:
    """``recorded`` for a checkpoint's module: a forward that fails (the arrays of
    ``params_file`` or the shapes do not fit the graph) is named by the line that fails."""
    try:
        return recorded(module, written, feed, record)
    except Exception as exc:
        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<mxcompat")
        ]
        # extract_tb's frames carry their line numbers (typeshed's FrameSummary allows None).
        line = linecache.getline(frames[-1].filename, frames[-1].lineno).strip() if frames else ""  # type: ignore[arg-type]
        raise fail(
            "to_torch",
            "the module converted from %s fails on input_shapes %s%s: %s: %s (the arrays of %s "
            "do not fit its graph, or the shapes do not)"
            % (
                prefix,
                [tuple(v.shape) for v in feed.values()],
                " at `%s`" % line if line else "",
                type(exc).__name__,
                str(exc).splitlines()[0] if str(exc) else "",
                params_file,
            ),
        ) from None


def compare(
    graph: Graph,
    module: Any,
    written: Written,
    feed: Mapping[str, np.ndarray],
    record: Record,
    actual: Mapping[str, Any],
    expected: Sequence[tuple[str, np.ndarray]],
    rtol: float,
    atol: float,
) -> None:
    """Every node of ``actual`` (the module's forward on ``feed``) against MXNet's
    ``expected``.  Where one differs, the forward runs again with each node computed from
    MXNet's own inputs: a node that differs there is wrong, and named in an
    ``AssertionError``; where every node agrees there, each computes what MXNet's computes, and
    the model itself amplifies float32's rounding (near-equal scores ranked or suppressed,
    saturated logits): one warning says where its outputs part from MXNet's."""
    paths = written.node_paths
    groups = _by_node([n["name"] for n in graph.nodes if n["op"] != "null"], expected)
    found = first_difference(graph, actual, groups, rtol, atol, paths, feed)
    if found is None:
        return
    forced = {node: [a for _, a in outs] for node, outs in groups.items()}
    again = recorded(module, written, feed, record, forced)
    alone = first_difference(graph, again, groups, rtol, atol, paths, feed)
    if alone is not None:
        raise AssertionError(
            "mxcompat.to_torch: %s, computed from MXNet's own inputs; the nodes before it agree"
            % alone
        )
    from .._core.log import warn

    warn(
        "mxcompat.to_torch: %s when the module runs end to end, yet computed from MXNet's own "
        "inputs every node agrees with MXNet's (rtol=%g, atol=%g): the model amplifies "
        "float32's rounding there (near-equal scores ranked or suppressed, saturated logits), "
        "so on such inputs its outputs part from MXNet's" % (found, rtol, atol)
    )


def first_difference(
    graph: Graph,
    actual: Mapping[str, Any],
    groups: Mapping[str, list[tuple[str, np.ndarray]]],
    rtol: float,
    atol: float,
    paths: Mapping[str, str] | None = None,
    feed: Mapping[str, np.ndarray] | None = None,
) -> str | None:
    """The first node whose output in ``actual`` ({node: output(s)}, the recording forward's)
    differs from MXNet's (``groups``: {node: [(output name, array)]}, ``_by_node``), in
    words, with the module that computes it (``paths``: node name -> module path); None where
    none does.
    Indices of a sort (``topk``, ``argsort``) agree where they pick equal values of MXNet's
    input (``feed``: the graph's inputs): ties may be ranked either way."""
    paths = paths or {}
    nodes = graph.nodes
    for node in nodes:
        if node["op"] == "null":
            continue
        outs = actual.get(node["name"])
        if outs is None:
            continue
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        mine = groups.get(node["name"], [])[: len(outs)]
        for k, ((out_name, want), got) in enumerate(zip(mine, outs)):
            if not hasattr(got, "detach"):
                continue  # a zeros whose shape MXNet infers (an RNN's begin state)
            got = got.detach().numpy()
            worst, bad = worst_difference(want, got, rtol, atol)
            if bad and _same_ranks(node, k, got, want, groups, nodes, feed):
                continue
            if bad:
                return (
                    "node %r (op %s, in %s) is the first whose output differs from MXNet's "
                    "(%s%s): %s"
                    % (
                        node["name"],
                        node["op"],
                        "model.%s" % paths[node["name"]] if paths.get(node["name"]) else "model",
                        out_name,
                        "" if len(outs) == 1 else ", output %d" % k,
                        "shape %s, MXNet's %s" % (got.shape, want.shape)
                        if got.shape != want.shape
                        else "largest |difference| %.3g, max|mxnet| %.3g"
                        % (worst, float(np.abs(want).max()) if want.size else 0.0),
                    )
                )
    return None


def _same_ranks(
    node: dict[str, Any],
    k: int,
    got: np.ndarray,
    want: np.ndarray,
    groups: Mapping[str, list[tuple[str, np.ndarray]]],
    nodes: Sequence[dict[str, Any]],
    feed: Mapping[str, np.ndarray] | None,
) -> bool:
    """Whether ``got``, output ``k`` of a sort ``node``, holds indices that pick the same
    values of the node's input (MXNet's) as MXNet's indices ``want`` do: where values tie,
    MXNet's std::partial_sort ranks them in an order of its own."""
    attrs = node["attrs"]
    if not sort_indices(node["op"], attrs, k) or got.shape != want.shape:
        return False
    source, index = node["inputs"][0][0], node["inputs"][0][1]
    src = nodes[source]
    if src["op"] == "null":
        data = (feed or {}).get(src["name"])
    else:
        outs = groups.get(src["name"], [])
        data = outs[index][1] if index < len(outs) else None
    if data is None:
        return False
    if attrs.get("axis", -1) == "None":  # the flattened input
        data, axis = data.reshape(-1), 0
    else:
        axis = int(attrs.get("axis", -1))
    size = data.shape[axis]
    picks = [got.astype(np.int64), want.astype(np.int64)]
    if any((p < 0).any() or (p >= size).any() for p in picks):
        return False
    mine, theirs = (np.take_along_axis(data, p, axis) for p in picks)
    return bool(np.array_equal(mine, theirs, equal_nan=True))


def _by_node(
    names: Sequence[str], expected: Sequence[tuple[str, np.ndarray]]
) -> dict[str, list[tuple[str, np.ndarray]]]:
    """{node name: its [(output name, array)]}: MXNet names a node's outputs after it
    (``NAME_output``, ``NAME_output0``, ``NAME_state``), in node order; a node whose outputs
    the converted module does not compute (what an RNN's parameters pass through) included."""
    groups: dict[str, list[tuple[str, np.ndarray]]]
    groups, position = {}, 0
    for k, name in enumerate(names):
        following = names[k + 1] if k + 1 < len(names) else None
        mine: list[tuple[str, np.ndarray]] = []
        while position < len(expected):
            out_name = expected[position][0]
            theirs = (
                following and len(following) > len(name) and out_name.startswith(following + "_")
            )
            if not out_name.startswith(name + "_") or theirs:
                break
            mine.append(expected[position])
            position += 1
        groups[name] = mine
    return groups
