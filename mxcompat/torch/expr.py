"""What an emitter returns: a structured expression (a call with its positional and keyword
arguments, a method call, an operator, a value) or a stock layer, never text; and the printer
that writes them as source laid out as ``ruff format`` lays it out (88 columns, a call split
after its opening bracket, then one argument per line with a trailing comma).  Imports neither
torch nor mxnet."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

WIDTH = 88  # ruff format's default line length
INDENT = "    "


class Expr:
    """A Python expression of the generated code."""

    def flat(self) -> str:
        """The expression on one line."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.flat()


@dataclass(frozen=True)
class Var(Expr):
    """A name, an attribute (``self.weight``) or any expression already written."""

    text: str

    def flat(self) -> str:
        return self.text


@dataclass(frozen=True)
class Lit(Expr):
    """A Python value written as a literal."""

    value: Any

    def flat(self) -> str:
        return literal(self.value)


@dataclass(frozen=True)
class Call(Expr):
    """``fn(args..., key=value...)``: ``fn`` a dotted name (``F.conv2d``, ``mxops.pooling``)."""

    fn: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    def parts(self) -> list[str]:
        return [as_expr(a).flat() for a in self.args] + [
            "%s=%s" % (k, as_expr(v).flat()) for k, v in self.kwargs
        ]

    def flat(self) -> str:
        return "%s(%s)" % (self.fn, ", ".join(self.parts()))


@dataclass(frozen=True)
class Method(Expr):
    """``obj.name(args..., key=value...)``."""

    obj: Expr
    name: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    def flat(self) -> str:
        call = Call("", self.args, self.kwargs).flat()
        return "%s.%s%s" % (_operand(self.obj), self.name, call)


@dataclass(frozen=True)
class BinOp(Expr):
    """``a op b op c``."""

    op: str
    operands: tuple[Expr, ...]

    def flat(self) -> str:
        return (" %s " % self.op).join(_operand(as_expr(o)) for o in self.operands)


@dataclass(frozen=True)
class Index(Expr):
    """``obj[index]``, the index written as it reads (``1:3, :``)."""

    obj: Expr
    index: str

    def flat(self) -> str:
        return "%s[%s]" % (_operand(self.obj), self.index)


def _operand(e: Expr) -> str:
    text = e.flat()
    return "(%s)" % text if isinstance(e, BinOp) else text


def call(fn: str, *args: Any, **kwargs: Any) -> Call:
    return Call(fn, tuple(args), tuple(kwargs.items()))


def method(obj: Any, name: str, *args: Any, **kwargs: Any) -> Method:
    return Method(as_expr(obj), name, tuple(args), tuple(kwargs.items()))


def as_expr(value: Any) -> Expr:
    return value if isinstance(value, Expr) else Lit(value)


def literal(value: Any) -> str:
    """A value as ruff format writes it: strings in double quotes, tuples with their comma."""
    if isinstance(value, str):
        if '"' not in value and "\\" not in value and value.isprintable():
            return '"%s"' % value
        return repr(value)
    if isinstance(value, tuple):
        if len(value) == 1:
            return "(%s,)" % literal(value[0])
        return "(%s)" % ", ".join(literal(v) for v in value)
    if isinstance(value, list):
        return "[%s]" % ", ".join(literal(v) for v in value)
    if isinstance(value, float):
        text = repr(value)
        return text if text not in ("inf", "-inf", "nan") else 'float("%s")' % text
    if isinstance(value, Expr):
        return value.flat()
    return repr(value)


@dataclass
class Layer:
    """A stock layer: ``cls(args..., key=value...)`` (``nn.Conv2d``, ``mxops.BatchNorm``) whose
    parameters and buffers are the node's inputs at ``params``/``buffers`` ({torch name:
    position}), called on the inputs at ``inputs``, flattened after the first axis first where
    ``flatten`` (MXNet's ``FullyConnected``).  ``names``: a name for each positional argument,
    for the constructor arguments a shared class lifts out.  ``pieces``: {torch name: MXNet
    name} of parameters that reach the node concatenated (a fused RNN's); ``output``: the item
    of what the layer returns that is the node's output (``nn.LSTM``'s ``(output, (h, c))``)."""

    cls: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    params: dict[str, int] = field(default_factory=dict)
    buffers: dict[str, int] = field(default_factory=dict)
    inputs: tuple[int, ...] = (0,)
    names: tuple[str, ...] = ()
    flatten: bool = False
    count: int = 1
    pieces: dict[str, str] = field(default_factory=dict)
    output: str = ""

    def constructor(self) -> Call:
        return Call(self.cls, self.args, self.kwargs)


# --- the printer -------------------------------------------------------------------------------


def statement(head: str, expr: Expr, indent: str, tail: str = "") -> list[str]:
    """``head expr tail`` (``x = ``, ``return ``; a trailing comma) as lines at ``indent``,
    split as ruff format splits a call too long for one line."""
    text = indent + head + expr.flat() + tail
    if len(text) <= WIDTH:
        return [text]
    lines = _split(indent, head, expr)
    lines[-1] += tail
    return lines


def _split(indent: str, head: str, expr: Expr) -> list[str]:
    if isinstance(expr, Call):
        opening, parts, closing = expr.fn + "(", _parts(expr.args, expr.kwargs), ")"
    elif isinstance(expr, Method):
        opening = "%s.%s(" % (_operand(expr.obj), expr.name)
        parts, closing = _parts(expr.args, expr.kwargs), ")"
    elif isinstance(expr, Lit) and isinstance(expr.value, (tuple, list)) and expr.value:
        brackets = "()" if isinstance(expr.value, tuple) else "[]"
        opening, closing = brackets[0], brackets[1]
        parts = [Lit(v) for v in expr.value]
    elif isinstance(expr, BinOp):
        # ruff wraps the operation in parentheses, one operand a line.
        lines = [indent + head + "("]
        for i, operand in enumerate(expr.operands):
            prefix = "" if i == 0 else expr.op + " "
            lines += statement(prefix, as_expr(operand), indent + INDENT)
        return lines + [indent + ")"]
    else:
        return [indent + head + expr.flat()]
    if not parts:
        return [indent + head + expr.flat()]
    inner = indent + INDENT
    one = inner + ", ".join(p.flat() for p in parts)
    if len(one) <= WIDTH:
        return [indent + head + opening, one, indent + closing]
    lines = [indent + head + opening]
    for p in parts:
        lines += statement("", p, inner, ",")
    return lines + [indent + closing]


@dataclass(frozen=True)
class _Keyword(Expr):
    key: str
    value: Expr

    def flat(self) -> str:
        return "%s=%s" % (self.key, self.value.flat())


def _parts(args: Sequence[Any], kwargs: Sequence[tuple[str, Any]]) -> list[Expr]:
    return [as_expr(a) for a in args] + [_Keyword(k, as_expr(v)) for k, v in kwargs]
