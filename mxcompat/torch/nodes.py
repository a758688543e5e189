"""A node of MXNet's symbol JSON as the emitters read it (attributes parsed from MXNet's
strings), the tables of emitters (op name -> emitter: a functional expression; op name -> layer
emitter: a stock layer, where MXNet's semantics are the layer's) and the one error for what is
not mapped.  Emitters return structure (``expr``), never text.  Imports neither torch nor
mxnet."""

from __future__ import annotations

import builtins
from typing import Any, Callable, Optional, Sequence, Tuple

from .expr import Expr, Layer, Var


class Unsupported(Exception):
    """An operator or attribute the converter does not map (one per node)."""

    def __init__(self, op: str, node: str, detail: str | None = None) -> None:
        self.op, self.node, self.detail = op, node, detail
        super().__init__(op, node, detail)


# --- attributes (MXNet's JSON holds every value as a string) --------------------------------------


def _tuple(text: Any, default: Any = ()) -> Any:
    if text is None:
        return default
    text = str(text).strip()
    if text in ("", "()", "[]", "None"):
        return () if text != "None" else default
    items = [t.strip() for t in text.strip("()[]").split(",") if t.strip()]
    return tuple(None if t == "None" else int(float(t)) for t in items)


def _bool(text: Any, default: bool = False) -> bool:
    if text is None:
        return default
    return str(text).strip().lower() in ("1", "true")


def _float(text: Any, default: Any = None) -> Any:
    if text is None or str(text).strip() == "None":
        return default
    return float(text)


def _int(text: Any, default: Any = None) -> Any:
    if text is None or str(text).strip() == "None":
        return default
    return int(float(text))


class Node:
    """One MXNet node as an emitter sees it: its attributes and its inputs' expressions."""

    def __init__(
        self,
        op: str,
        name: str,
        attrs: dict[str, Any],
        args: Sequence[Expr],
        shapes: Sequence[builtins.tuple[int, ...] | None] = (),
        pieces: Sequence[builtins.tuple[builtins.str, builtins.tuple[int, ...]]] = (),
    ):
        self.op, self.name, self.attrs, self.args = op, name, attrs, list(args)
        # Each input's shape where it is a parameter or a state (the layers' sizes), else None.
        self.shapes = list(shapes) + [None] * (len(self.args) - len(shapes))
        # A fused RNN's parameters, (name, shape) each, where they reach it concatenated.
        self.pieces = list(pieces)

    def tuple(self, key: builtins.str, default: Any = ()) -> Any:
        return _tuple(self.attrs.get(key), default)

    def bool(self, key: builtins.str, default: builtins.bool = False) -> builtins.bool:
        return _bool(self.attrs.get(key), default)

    def float(self, key: builtins.str, default: Any = None) -> Any:
        return _float(self.attrs.get(key), default)

    def int(self, key: builtins.str, default: Any = None) -> Any:
        return _int(self.attrs.get(key), default)

    def str(self, key: builtins.str, default: Any = None) -> Any:
        value = self.attrs.get(key)
        return default if value is None or value == "None" else value

    def refuse(self, detail: builtins.str) -> None:
        raise Unsupported(self.op, self.name, detail)

    def arg(self, i: builtins.int) -> Expr:
        return self.args[i] if i < len(self.args) else Var("None")


def sort_indices(op: str, attrs: dict[str, Any], k: int) -> bool:
    """Whether output ``k`` of a node (MXNet's ``op`` and attributes) holds a sort's indices:
    ``argsort``'s, ``topk``'s where its ``ret_typ`` gives them."""
    if op == "argsort":
        return k == 0
    if op == "topk":
        return (attrs.get("ret_typ", "indices"), k) in (("indices", 0), ("both", 1))
    return False


# --- the registries: op name -> emitter ----------------------------------------------------------

Emitter = Callable[[Node], Tuple[Expr, int]]
LayerEmitter = Callable[[Node], Optional[Layer]]
EMITTERS: dict[str, Emitter] = {}  # a functional expression and its number of outputs
LAYERS: dict[str, LayerEmitter] = {}  # a stock layer, or None where this node's attributes
# are not the layer's


def _register(table: dict[str, Any], ops: Sequence[str], fn: Any) -> None:
    for op in ops:
        if op in table:
            raise RuntimeError("a second emitter for %r (%s)" % (op, fn.__qualname__))
        table[op] = fn


def _emits(*ops: str) -> Callable[[Emitter], Emitter]:
    def register(fn: Emitter) -> Emitter:
        _register(EMITTERS, ops, fn)
        return fn

    return register


def _layer(*ops: str) -> Callable[[LayerEmitter], LayerEmitter]:
    def register(fn: LayerEmitter) -> LayerEmitter:
        _register(LAYERS, ops, fn)
        return fn

    return register


def emit_each(table: dict[str, Emitter], ops: dict[str, Any], make: Callable[..., Emitter]) -> None:
    """Register ``make(value)`` for each ``op: value`` (the tables of like operators)."""
    for op, value in ops.items():
        _register(table, [op], make(value))
