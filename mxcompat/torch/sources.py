"""What ``to_torch`` converts, asked once: a Gluon block, a Module, a ``(symbol, arg_params,
aux_params)`` triple or a checkpoint ``(prefix, epoch)``, each a source that builds the one
graph (``tree.Graph``: nodes, arrays' shapes, auxiliary states, frozen names), says which
block tree the module mirrors and where MXNet's outputs for verification come from."""

from __future__ import annotations

import numbers
import os
import sys
from typing import Any

from .._core.conversion import fail, import_mxnet, mxnet_importable, quoted
from . import codegen, recurrent, tree
from .tree import Blocks, Graph

WHERE = "to_torch"


class Source:
    """A model as the converter reads it: ``graph``, ``params`` ({name: array}), ``known``
    (the input shapes the model knows), ``root`` (the module's class name)."""

    root = "MXNetModel"

    def __init__(self, graph_json: Any, aux: set[str], params: dict[str, Any], frozen: set[str]):
        self.params = params
        self.known: dict[str, tuple[int, ...]] = {}
        self.graph = _graph(graph_json, aux, params, frozen)

    def blocks(self) -> Blocks | None:
        """The block tree the module mirrors; None: the tree the names spell, else flat."""
        return None

    def inputs(self) -> list[str]:
        nodes = self.graph.nodes
        return [n["name"] for n in nodes if n["op"] == "null" and n["name"] not in self.params]

    def check(
        self,
        module: Any,
        written: Any,
        shapes: dict[str, tuple[int, ...]],
        rtol: float,
        atol: float,
        record: Any,
        verify_with: str | None = None,
    ) -> None:
        """Every node of ``module`` against MXNet's, on a seeded input of ``shapes``."""
        raise NotImplementedError


class SymbolSource(Source):
    """A Module, a triple, or (``GluonSource``) a block: MXNet's own symbol."""

    def __init__(self, model: Any):
        from ..convert.model import model_graph
        from ..convert.shared import known_shapes

        symbol, arg_params, aux_params, _ = model_graph(model, WHERE, inference=False)
        params = dict(arg_params, **aux_params)
        aux = set(symbol.list_auxiliary_states())
        super().__init__(symbol.tojson(), aux, params, _frozen(model, params, aux))
        self.model, self.symbol = model, symbol
        self.known = known_shapes(model)

    def check(
        self,
        module: Any,
        written: Any,
        shapes: dict[str, tuple[int, ...]],
        rtol: float,
        atol: float,
        record: Any,
        verify_with: str | None = None,
    ) -> None:
        """Every node of ``module`` against MXNet's on a seeded input of ``shapes``: MXNet
        first (its shape inference names what does not fit), then the module."""
        from . import verify

        types = verify.types(self.graph, self.params)
        feed = verify.feed(self.graph, shapes, types)
        expected = verify.mxnet_outputs(self.symbol, self.params, feed, types)
        actual = verify.recorded(module, written, feed, record)
        verify.compare(self.graph, module, written, feed, record, actual, expected, rtol, atol)


class GluonSource(SymbolSource):
    """A HybridBlock: its own block tree, taken while it is traced."""

    def __init__(self, block: Any):
        super().__init__(block)
        name = type(block).__name__
        self.root = name if name.isidentifier() else Source.root

    def blocks(self) -> Blocks | None:
        from .blocks import gluon_blocks

        cached = getattr(self.model, "_cached_graph", ())
        inputs = [s.name for s in cached[0]] if cached else (self.inputs() or ["data"])
        return gluon_blocks(self.model, inputs, self.graph)


class CheckpointSource(Source):
    """A checkpoint's two files, read by mxcompat's own reader whether MXNet is installed or
    not (one path: the same model.py and weights either way); MXNet's outputs from this
    Python's MXNet, or another's (``verify_with``)."""

    def __init__(self, prefix: Any, epoch: int):
        from ..formats.checkpoint import Checkpoint
        from ..freeze import is_frozen

        self.checkpoint = ckpt = Checkpoint(prefix, epoch, WHERE)
        # A checkpoint says nothing of what is frozen but mxcompat's registry.
        frozen = {n for n in ckpt.params if is_frozen(n)}
        super().__init__(ckpt.graph, ckpt.aux, ckpt.params, frozen)

    def check(
        self,
        module: Any,
        written: Any,
        shapes: dict[str, tuple[int, ...]],
        rtol: float,
        atol: float,
        record: Any,
        verify_with: str | None = None,
    ) -> None:
        """The module first (the arrays of a .params file may not fit the graph: named by the
        line that fails), then MXNet: ``verify_with`` (another Python's path) if given, else
        here when MXNet is importable; else say so in one warning."""
        from . import verify

        ckpt = self.checkpoint
        types = verify.types(self.graph, self.params)
        feed = verify.feed(self.graph, shapes, types)
        actual = verify.run_once(module, written, feed, record, ckpt.prefix, ckpt.params_file)
        if verify_with is not None:
            from .mxnet_side import outputs_elsewhere

            expected = outputs_elsewhere(
                verify_with, ckpt.symbol_file, ckpt.params_file, feed, types
            )
        elif mxnet_importable():
            symbol = import_mxnet().sym.load(ckpt.symbol_file)
            expected = verify.mxnet_outputs(symbol, self.params, feed, types)
        else:
            from .._core.log import warn

            warn(
                "mxcompat.to_torch: %s is converted and runs on input_shapes, but is not "
                "checked against MXNet node by node: MXNet is not installed here (mxcompat "
                "torch --verify-with PYTHON checks it with another interpreter's MXNet)"
                % ckpt.prefix
            )
            return
        verify.compare(self.graph, module, written, feed, record, actual, expected, rtol, atol)


def source(model: Any) -> Source:
    """The source of what ``to_torch`` was given."""
    if _is_checkpoint(model):
        return CheckpointSource(*model)
    mx = sys.modules.get("mxnet")
    if mx is not None and isinstance(model, mx.gluon.HybridBlock):
        return GluonSource(model)
    return SymbolSource(model)


def _is_checkpoint(model: Any) -> bool:
    return (
        isinstance(model, tuple)
        and len(model) == 2
        and isinstance(model[0], (str, os.PathLike))
        and isinstance(model[1], numbers.Integral)
        and not isinstance(model[1], bool)
    )


def _frozen(model: Any, params: dict[str, Any], aux: set[str]) -> set[str]:
    """The parameters MXNet would not train: a Module's fixed_param_names, a Gluon
    Parameter's grad_req 'null', and mxcompat's freeze registry (statistics: the registry
    only)."""
    from ..freeze import is_frozen

    frozen = {n for n in params if is_frozen(n)}
    mx = import_mxnet()
    if isinstance(model, mx.mod.Module):
        frozen.update(getattr(model, "_fixed_param_names", None) or ())
    elif isinstance(model, mx.gluon.HybridBlock):
        for param in model.collect_params().values():
            # Gluon makes every BatchNorm statistic grad_req 'null' and still moves it in a
            # training forward: that 'null' freezes nothing.
            if param.grad_req == "null" and param.name not in aux:
                frozen.add(param.name)
    return frozen & set(params)


def _graph(graph_json: Any, aux: set[str], params: dict[str, Any], frozen: set[str]) -> Graph:
    """The ``tree.Graph`` of a symbol's JSON (text or parsed): its nodes, the arrays' shapes,
    the frozen parameters and the BatchNorm nodes whose statistics are frozen."""
    nodes, heads = codegen.load(graph_json)
    ops, missing = codegen.needed(nodes)
    variables = [n["name"] for n in nodes if n["op"] == "null"]
    missing_aux = [n for n in variables if n in aux and n not in params]
    if missing_aux:
        raise fail(WHERE, "auxiliary state(s) %s have no value" % quoted(missing_aux))
    shapes = {n: tuple(params[n].shape) for n in variables if n in params}
    frozen_stats = set()
    for node in nodes:
        if node["op"] == "BatchNorm":
            stats = [nodes[j]["name"] for j, _ in node["inputs"][3:5]]
            if any(s in frozen for s in stats):
                frozen_stats.add(node["name"])
    graph = tree.Graph(nodes, heads, shapes, set(aux) & set(shapes), set(frozen), frozen_stats)
    graph.rnn_pieces, graph.skipped = recurrent.rnn_pieces(nodes, heads, shapes)
    graph.zero_states = recurrent.zero_states(nodes, heads)
    if missing:  # every operator not mapped, and every setting refused, in one error
        message = codegen.unsupported_message(ops, missing, graph.refusals())
        raise fail(WHERE, message, NotImplementedError)
    graph.check_entries()
    return graph
