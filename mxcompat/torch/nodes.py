"""A node of MXNet's symbol JSON as the emitters read it (attributes parsed from MXNet's
strings), the table of emitters (op name -> emitter) and the one error for what is not mapped.
Imports neither torch nor mxnet."""


class Unsupported(Exception):
    """An operator or attribute the converter does not map (one per node)."""

    def __init__(self, op, node, detail=None):
        self.op, self.node, self.detail = op, node, detail
        super().__init__(op, node, detail)


# --- attributes (MXNet's JSON holds every value as a string) --------------------------------------


def _tuple(text, default=()):
    if text is None:
        return default
    text = str(text).strip()
    if text in ("", "()", "[]", "None"):
        return () if text != "None" else default
    items = [t.strip() for t in text.strip("()[]").split(",") if t.strip()]
    return tuple(None if t == "None" else int(float(t)) for t in items)


def _bool(text, default=False):
    if text is None:
        return default
    return str(text).strip().lower() in ("1", "true")


def _float(text, default=None):
    if text is None or str(text).strip() == "None":
        return default
    return float(text)


def _int(text, default=None):
    if text is None or str(text).strip() == "None":
        return default
    return int(float(text))


class Node:
    """One MXNet node as an emitter sees it: its attributes and its inputs' expressions."""

    def __init__(self, op, name, attrs, args):
        self.op, self.name, self.attrs, self.args = op, name, attrs, args

    def tuple(self, key, default=()):
        return _tuple(self.attrs.get(key), default)

    def bool(self, key, default=False):
        return _bool(self.attrs.get(key), default)

    def float(self, key, default=None):
        return _float(self.attrs.get(key), default)

    def int(self, key, default=None):
        return _int(self.attrs.get(key), default)

    def str(self, key, default=None):
        value = self.attrs.get(key)
        return default if value is None or value == "None" else value

    def refuse(self, detail):
        raise Unsupported(self.op, self.name, detail)

    def arg(self, i):
        return self.args[i] if i < len(self.args) else "None"


# --- the emitters: node -> (expression, number of outputs) ----------------------------------------

EMITTERS: dict = {}  # op name -> emitter


def _emits(*ops):
    def register(fn):
        for op in ops:
            EMITTERS[op] = fn
        return fn

    return register
