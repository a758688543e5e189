"""Symbol files of older releases upgraded as MXNet 1.9.1's loader upgrades them, so that a
graph from MXNet 0.8-0.12 (nodes with ``"param"`` and ``"attr"``, no auxiliary states) reads
as ``mx.sym.load`` gives it on 1.9.1.  What the loader does, by the version the file names
(``attrs.mxnet_version``; none is 0.8.0), in its order:

- before 1.9.1: the hidden keys (``ctx_group``, ``lr_mult``, ``wd_mult``, ``force_mirroring``,
  ``mirror_stage``) become ``__KEY__``; ``ARG_KEY`` on an operator goes to its input
  variable ``ARG`` as ``__KEY__`` (``weight_lr_mult`` of a FullyConnected: its weight's
  ``__lr_mult__``), and one naming no input of the operator is refused, as MXNet refuses it;
- before 0.9.0: the inputs a node lacks (BatchNorm's moving mean and variance were not
  stored) added as variables ``NODE_ARG``, each with a copy of its node's attributes;
- before 0.9.4: the initialisers operators give their input variables (BatchNorm's
  statistics ``zero`` and ``one``, PReLU's slope 0.25);
- before 0.9.5: ``argmax``/``argmin`` with ``axis`` "-1" lose it (the whole array).

A graph that gains nodes is put in MXNet's order (depth first from the heads, inputs before
their node), as ``mx.sym.load`` then ``tojson`` gives it."""

from __future__ import annotations

from .ndarray_file import _error

CURRENT = 10901
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")

_NORM = ("data", "gamma", "beta", "moving_mean", "moving_var")
_WEIGHTED = ("Convolution", "Deconvolution", "FullyConnected")


def _true(text):
    return str(text).strip().lower() in ("true", "1")


def input_names(op, attrs):
    """The names of an operator's inputs (MXNet's ``FListInputNames``) for the operators
    whose inputs an old file may hold fewer of, or an attribute may name; None for others."""
    if op in ("BatchNorm", "BatchNorm_v1", "_contrib_SyncBatchNorm", "_contrib_BatchNormWithReLU"):
        return _NORM
    if op in _WEIGHTED:
        # Deconvolution has no bias unless asked; the others have one unless told not to.
        no_bias = _true(attrs.get("no_bias", "True" if op == "Deconvolution" else "False"))
        return ("data", "weight") if no_bias else ("data", "weight", "bias")
    if op == "LeakyReLU":
        return ("data", "gamma") if attrs.get("act_type") == "prelu" else ("data",)
    if op in ("LayerNorm", "InstanceNorm", "GroupNorm"):
        return ("data", "gamma", "beta")
    if op == "Embedding":
        return ("data", "weight")
    if op == "IdentityAttachKLSparseReg":
        return ("data", "moving_avg")
    return None


# The initialisers an operator gives its input variables at composition (by position).
_ZERO, _ONE = '["zero", {}]', '["one", {}]'
INITS = {
    "BatchNorm": {3: _ZERO, 4: _ONE},
    "BatchNorm_v1": {3: _ZERO, 4: _ONE},
    "_contrib_SyncBatchNorm": {3: _ZERO, 4: _ONE},
    "_contrib_BatchNormWithReLU": {3: _ZERO, 4: _ONE},
    "LeakyReLU": {1: '["Constant", {"value": 0.25}]'},
    "IdentityAttachKLSparseReg": {1: _ZERO},
}


def _post_order(nodes, heads):
    """Node indices depth first from the heads, each after its inputs (MXNet's order)."""
    order, seen = [], set()
    for head in heads:
        stack = [(head[0], 0)]
        while stack:
            i, k = stack.pop()
            if k == 0 and i in seen:
                continue
            inputs = nodes[i]["inputs"]
            if k < len(inputs):
                stack.append((i, k + 1))
                j = inputs[k][0]
                if j not in seen:
                    stack.append((j, 0))
            elif i not in seen:
                seen.add(i)
                order.append(i)
    return order


def _hidden_keys(nodes, order, where):
    for i in order:
        node = nodes[i]
        attrs, hidden = node["attrs"], []
        for key in list(attrs):
            for h in HIDDEN_KEYS:
                at = key.rfind(h)
                if at == 0 or (at != -1 and at == len(key) - len(h)):
                    hidden.append((key, attrs.pop(key)))
                    break
        for key, value in hidden:
            placed = False
            for h in HIDDEN_KEYS:
                at = key.rfind(h)
                if at == 0 and key == h:
                    attrs["__%s__" % h] = value
                    placed = True
                    break
                if at > 1 and at == len(key) - len(h):
                    if node["op"] == "null":
                        break
                    names = input_names(node["op"], attrs)
                    if names is None:
                        break  # MXNet keeps it on the node too
                    arg = key[: at - 1]
                    if arg in names and names.index(arg) < len(node["inputs"]):
                        target = nodes[node["inputs"][names.index(arg)][0]]
                        if target["op"] == "null":
                            target["attrs"]["__%s__" % h] = value
                            placed = True
                    if not placed:
                        raise _error(
                            where,
                            None,
                            "attributes MXNet's %s takes (node %r)" % (node["op"], node["name"]),
                            "%r, for an input variable %r it does not have" % (key, arg),
                        )
                    break
            if not placed:
                attrs[key] = value


def _add_inputs(nodes, order):
    """Variables for the inputs a node lacks; whether any was added."""
    added = False
    for i in order:
        node = nodes[i]
        if node["op"] == "null":
            continue
        names = input_names(node["op"], node["attrs"])
        if names is None:
            continue
        for arg in names[len(node["inputs"]) :]:
            name = "%s_%s" % (node["name"], arg) if node["name"] else arg
            nodes.append({"op": "null", "name": name, "inputs": [], "attrs": dict(node["attrs"])})
            node["inputs"].append([len(nodes) - 1, 0, 0])
            added = True
    return added


def _initialisers(nodes, order):
    for i in order:
        node = nodes[i]
        for k, init in INITS.get(node["op"], {}).items():
            if k < len(node["inputs"]):
                var = nodes[node["inputs"][k][0]]
                if var["op"] == "null" and "__init__" not in var["attrs"]:
                    var["attrs"]["__init__"] = init


def upgrade(graph, version, where):
    """``graph`` (``normalise_symbol``'s, changed in place and returned) as MXNet 1.9.1 loads
    a file that release ``version`` wrote (None: older than the number, 0.8.0)."""
    version = 800 if version is None else version
    if version >= CURRENT:
        return graph
    nodes = graph["nodes"]
    order = _post_order(nodes, graph["heads"])
    _hidden_keys(nodes, order, where)
    added = version < 900 and _add_inputs(nodes, order)
    if added:
        order = _post_order(nodes, graph["heads"])
    if version < 904:
        _initialisers(nodes, order)
    if version < 905:
        for i in order:
            node = nodes[i]
            if node["op"] in ("argmax", "argmin") and node["attrs"].get("axis") == "-1":
                del node["attrs"]["axis"]
    if added:
        # The nodes in MXNet's order (those no head reaches are left out, as MXNet leaves them).
        index = {old: new for new, old in enumerate(order)}
        new_nodes = []
        for old in order:
            node = nodes[old]
            node["inputs"] = [[index[e[0]], e[1], e[2]] for e in node["inputs"]]
            new_nodes.append(node)
        graph["nodes"] = new_nodes
        graph["heads"] = [[index[h[0]], h[1], h[2]] for h in graph["heads"]]
        graph["arg_nodes"] = [i for i, n in enumerate(new_nodes) if n["op"] == "null"]
        graph.pop("node_row_ptr", None)
    for node in graph["nodes"]:
        node.pop("backward_source_id", None)  # 0.8's, which MXNet reads and drops
    return graph
