"""MXNet's checkpoint files read with NumPy alone: no mxnet import, ever (the way out for
machines where MXNet cannot be installed).

- ``PREFIX-EPOCH.params`` (``mx.nd.save``, ``Module.save_checkpoint``, Gluon's
  ``save_parameters``): the NDArray list (a magic number and a reserved word, the arrays, the
  names), each array in one of its four layouts: the legacy one (no magic: the first word is
  the number of dimensions, then 32-bit dimensions), V1 (64-bit dimensions), V2 (a storage
  type: MXNet 1.x's usual one) and V3 (NumPy shape semantics, ``npx.set_np()``: 0-d arrays).
- ``PREFIX-symbol.json``: the graph of every release, normalised to today's form.
- A states file (``Module.save_optimizer_states``, ``Trainer.save_states``): a pickle of the
  Updater's states, with the optimizer when it was dumped, read by an Unpickler that maps
  MXNet's classes to records and refuses every other class.

Every failure is one ``CheckpointError`` naming the file, the byte offset and what was
expected; nothing is returned half-read."""

from __future__ import annotations

import json

from .._core.conversion import checkpoint_files, fail, missing_checkpoint, quoted
from .legacy_symbol import upgrade
from .ndarray_file import (  # noqa: F401  (re-exported: the readers' one API)
    V1_MAGIC,
    V2_MAGIC,
    V3_MAGIC,
    CheckpointError,
    _error,
    _read,
    read_ndarray,
    read_ndarray_list,
)
from .states_file import States, states_from_bytes  # noqa: F401  (States: re-exported)


class Params:
    """A ``.params`` file: ``arrays`` ({name: numpy array}, in the file's order; ``{}`` for a
    list saved without names, whose arrays are ``values``), ``arg`` and ``aux`` (the arrays
    named ``arg:NAME`` and ``aux:NAME``, by NAME: a Module's checkpoint)."""

    def __init__(self, values, names):
        self.values = values
        self.names = names
        self.arrays = dict(zip(names, values))
        self.arg = {n[4:]: v for n, v in self.arrays.items() if n.startswith("arg:")}
        self.aux = {n[4:]: v for n, v in self.arrays.items() if n.startswith("aux:")}

    def __repr__(self):
        return "Params(%d arrays, %d arg, %d aux)" % (
            len(self.values),
            len(self.arg),
            len(self.aux),
        )


def read_params(path):
    """The arrays of a ``.params`` file (any release 1.3.1 ... 1.9.1) as a ``Params``."""
    path = str(path)
    values, names = read_ndarray_list(_read(path, "parameters file"), path)
    empty = [i for i, v in enumerate(values) if v is None]
    if empty:
        raise _error(path, None, "arrays, not MXNet's empty NDArray (array %d)" % empty[0])
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise _error(path, None, "each name once", "%r more than once" % twice[:3])
    return Params(values, names)


# --- the symbol JSON ---------------------------------------------------------------------


def _entry(value, n_nodes, where, what, total=None):
    """A node entry ``[node, output, version]`` (files before nnvm's versions have 2 items)
    naming one of the first ``n_nodes`` nodes (of ``total``: a later one is named as such)."""
    if (
        not isinstance(value, list)
        or len(value) not in (2, 3)
        or not all(type(v) is int for v in value)
        or value[0] < 0
        or value[1] < 0
    ):
        raise _error(where, None, "%s as [node, output(, version)] of a node" % what, repr(value))
    if value[0] >= n_nodes:
        if total is not None and value[0] < total:
            # MXNet writes each node after its inputs: a later one is a forward reference,
            # and the node itself or one after it that leads back to it a cycle.
            raise _error(
                where,
                None,
                "%s naming a node before it (MXNet writes each node after its inputs)" % what,
                "node %d, %s (a cycle or a forward reference)"
                % (value[0], "itself" if value[0] == n_nodes else "after it"),
            )
        raise _error(
            where, None, "%s as [node, output(, version)] of one of its nodes" % what, value
        )
    return [value[0], value[1], value[2] if len(value) == 3 else 0]


def normalise_symbol(graph, where="the symbol JSON"):
    """``Symbol.tojson()``'s graph (already parsed) in today's form: each node with "op",
    "name", "inputs" ([node, output, version] each) and "attrs" (in older files "param" and
    "attr", merged); "arg_nodes", "heads", "node_row_ptr" when given, and the graph's "attrs"."""
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise _error(where, None, 'a graph with "nodes" (MXNet\'s symbol JSON)')
    nodes = []
    for i, node in enumerate(graph["nodes"]):
        what = "node %d" % i
        if not isinstance(node, dict) or not all(
            isinstance(node.get(k), str) for k in ("op", "name")
        ):
            raise _error(where, None, '%s with a string "op" and "name"' % what)
        # Files before 0.9 hold the operator's settings in "param" and the user's in "attr",
        # both read, "attr" winning where a key is in both (as MXNet reads them).
        attrs = {}
        for key in ("param", "attr", "attrs"):
            more = node.get(key) or {}
            if not isinstance(more, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in more.items()
            ):
                raise _error(where, None, "%s's attributes as strings" % what)
            attrs.update(more)
        inputs = node.get("inputs", [])
        if not isinstance(inputs, list):
            raise _error(where, None, "%s's inputs as a list" % what)
        # Inputs come before their node: a graph in topological order, as MXNet writes it.
        inputs = [_entry(e, i, where, "%s's input" % what, len(graph["nodes"])) for e in inputs]
        if node["op"] == "null" and inputs:
            raise _error(where, None, "%s (a variable) without inputs" % what)
        out = {k: v for k, v in node.items() if k not in ("attr", "attrs", "param")}
        out.update(op=node["op"], name=node["name"], inputs=inputs, attrs=dict(attrs))
        nodes.append(out)
    result = {"nodes": nodes}
    n = len(nodes)
    variables = [i for i, node in enumerate(nodes) if node["op"] == "null"]
    arg_nodes = graph.get("arg_nodes", variables)
    if (
        not isinstance(arg_nodes, list)
        or not all(type(i) is int for i in arg_nodes)
        or sorted(arg_nodes) != variables
    ):
        raise _error(where, None, '"arg_nodes" listing the variables %r' % variables[:8])
    result["arg_nodes"] = list(arg_nodes)
    heads = graph.get("heads")
    if not isinstance(heads, list) or not heads:
        raise _error(where, None, '"heads", the outputs as [node, output, version]')
    result["heads"] = [_entry(h, n, where, "a head") for h in heads]
    if "node_row_ptr" in graph:
        ptr = graph["node_row_ptr"]
        if not isinstance(ptr, list) or len(ptr) != n + 1 or not all(type(p) is int for p in ptr):
            raise _error(where, None, '"node_row_ptr" with %d entries' % (n + 1))
        result["node_row_ptr"] = list(ptr)
    attrs = graph.get("attrs", {})
    if not isinstance(attrs, dict):
        raise _error(where, None, 'the graph\'s "attrs" as an object')
    result["attrs"] = dict(attrs)
    return result


def check_outputs(graph, where, variables=True):
    """Every input and head of ``graph`` (normalised) names an output its node has: what
    "node_row_ptr" counts for each node when the file has it, and with ``variables`` a
    variable's one output."""
    nodes = graph["nodes"]
    ptr = graph.get("node_row_ptr")
    if ptr is not None and (ptr[0] != 0 or any(b < a for a, b in zip(ptr, ptr[1:]))):
        raise _error(where, None, '"node_row_ptr" counting up from 0', ptr[:8])
    entries = [(e, "node %d's input" % i) for i, n in enumerate(nodes) for e in n["inputs"]]
    entries += [(h, "a head") for h in graph["heads"]]
    for (node, out, _), what in entries:
        if ptr is not None:
            outputs = ptr[node + 1] - ptr[node]
        elif variables and nodes[node]["op"] == "null":
            outputs = 1
        else:
            continue  # an operator's outputs are counted by node_row_ptr alone
        if out >= outputs:
            raise _error(
                where,
                None,
                "%s naming one of the %d outputs of node %d" % (what, outputs, node),
                out,
            )


def symbol_version(graph):
    """The release that wrote ``graph`` (normalised) as MXNet's number (10901 for 1.9.1),
    or None for files older than the number."""
    value = graph["attrs"].get("mxnet_version")
    if isinstance(value, list) and len(value) == 2 and type(value[1]) is int:
        return value[1]
    return None


def read_symbol(path):
    """``PREFIX-symbol.json`` of any release, normalised (``normalise_symbol``) and, when an
    older release wrote it, upgraded as MXNet 1.9.1 upgrades it (``legacy_symbol``)."""
    path = str(path)
    data = _read(path, "symbol file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _error(path, exc.start, "text in UTF-8 (a symbol JSON)") from None
    try:
        graph = json.loads(text)
    except ValueError as exc:
        pos = getattr(exc, "pos", None)
        at = None if pos is None else len(text[:pos].encode("utf-8"))
        raise _error(path, at, "JSON (%s)" % getattr(exc, "msg", exc)) from None
    except RecursionError:
        raise _error(path, None, "JSON nested as MXNet writes it") from None
    graph = normalise_symbol(graph, path)
    check_outputs(graph, path)
    # As MXNet 1.9.1 loads it: older files upgraded (legacy_symbol).
    return upgrade(graph, symbol_version(graph), path)


def check_params(graph, params, where, inputs=None):
    """Whether ``params`` (``read_params``) belongs to ``graph`` (``read_symbol``): each of its
    ``arg:``/``aux:`` names a variable of the graph, and with ``inputs`` (the data's names)
    every other variable has its array.  ``where``: the two files, for the message."""
    variables = [n["name"] for n in graph["nodes"] if n["op"] == "null"]
    known = set(variables)
    stray = [n for n in list(params.arg) + list(params.aux) if n not in known]
    if stray or not (params.arg or params.aux):
        raise _error(
            where,
            None,
            "arrays named arg:NAME or aux:NAME after the graph's variables (%s)"
            % ", ".join(variables[:6]),
            "%s (a symbol file from another checkpoint?)" % ", ".join(sorted(stray)[:6])
            if stray
            else "no such names",
        )
    if inputs is not None:
        missing = [
            n for n in variables if n not in params.arg and n not in params.aux and n not in inputs
        ]
        if missing:
            raise _error(
                where,
                None,
                "an array for each parameter of the graph",
                "none for %s" % ", ".join(missing[:6]),
            )


# --- a checkpoint: both files, matched ------------------------------------------------


# Where an operator reads a parameter (a variable that must have a value in the .params file,
# not an input of the graph): every input position from 1 on, except where noted.
WEIGHT_POSITIONS = {
    "Convolution": None,
    "Deconvolution": None,
    "FullyConnected": None,
    "BatchNorm": None,
    "BatchNorm_v1": None,
    "SyncBatchNorm": None,
    "_contrib_SyncBatchNorm": None,
    "LayerNorm": None,
    "InstanceNorm": None,
    "GroupNorm": None,
    "Embedding": None,
    "LeakyReLU": None,
    "RNN": (1,),  # 2 and 3 are the begin states, which a graph may take as inputs
}
# The auxiliary states' positions (what MXNet's list_auxiliary_states lists).
AUX_POSITIONS = {
    "BatchNorm": (3, 4),
    "BatchNorm_v1": (3, 4),
    "SyncBatchNorm": (3, 4),
    "_contrib_SyncBatchNorm": (3, 4),
}


class Checkpoint:
    """The two files of checkpoint ``(prefix, epoch)``, read and matched against each other:
    ``graph`` (the normalised symbol JSON), ``params`` ({name: numpy array}, parameters and
    auxiliary states) and ``aux`` (the auxiliary states' names).  ``where``: what the errors
    name (``mxcompat.WHERE: ...``)."""

    def __init__(self, prefix, epoch, where="to_torch"):
        self.prefix, self.epoch, self.where = str(prefix), epoch, where
        self.symbol_file, self.params_file = checkpoint_files(prefix, epoch)
        missing = missing_checkpoint(self.prefix, epoch)
        if missing:
            raise fail(where, missing, FileNotFoundError)
        self.graph = read_symbol(self.symbol_file)
        found = read_params(self.params_file)
        # A Module's or Gluon's checkpoint names each array arg:NAME or aux:NAME; one saved
        # with mx.nd.save of a plain dict does not (then the graph says which are states).
        if found.arg or found.aux:
            self.params = dict(found.arg, **found.aux)
        else:
            self.params = dict(found.arrays)
        nodes = self.graph["nodes"]
        self.aux = set(found.aux) | {
            nodes[e[0]]["name"]
            for node in nodes
            for i, e in enumerate(node["inputs"])
            if i in AUX_POSITIONS.get(node["op"], ()) and nodes[e[0]]["op"] == "null"
        }
        self.check_names()

    def arguments(self):
        """The graph's variables that are not auxiliary states, in node order."""
        return [
            n["name"]
            for n in self.graph["nodes"]
            if n["op"] == "null" and n["name"] not in self.aux
        ]

    def check_names(self):
        """One error naming every array the graph does not use, every parameter it reads that
        the file lacks: a symbol file of another checkpoint, or a mixed-up .params."""
        nodes = self.graph["nodes"]
        variables = {n["name"] for n in nodes if n["op"] == "null"}
        needed = set(self.aux)
        for node in nodes:
            if node["op"] in WEIGHT_POSITIONS:
                positions = WEIGHT_POSITIONS[node["op"]]
                for i, e in enumerate(node["inputs"]):
                    if i and (positions is None or i in positions) and nodes[e[0]]["op"] == "null":
                        needed.add(nodes[e[0]]["name"])
        extra = [n for n in self.params if n not in variables]
        missing = sorted(needed - set(self.params))
        if extra or missing:
            raise fail(
                self.where,
                "%s does not fit the graph of %s (a symbol file of another checkpoint?): %s"
                % (
                    self.params_file,
                    self.symbol_file,
                    "; ".join(
                        s
                        for s in (
                            extra and "arrays the graph does not use: %s" % _few(extra),
                            missing and "parameters it lacks: %s" % _few(missing),
                        )
                        if s
                    ),
                ),
            )


def _few(names, most=8):
    shown = quoted(names[:most])
    return shown + (" and %d more" % (len(names) - most) if len(names) > most else "")


# --- the optimizer states file (its reader: states_file.py) -----------------------------


def read_states(path):
    """A file ``Module.save_optimizer_states`` or ``Trainer.save_states`` wrote, as
    ``states_file.States``: ``states`` ({index: numpy arrays, tuples of them or None}) and
    ``optimizer`` (a record of its class and attributes, or None).  MXNet's classes come out
    as records; every other class but plain data's is refused."""
    return states_from_bytes(_read(str(path), "optimizer states file"), str(path))
