"""An MXNet symbol graph (``Symbol.tojson()``) as the source of a ``torch.nn.Module``: one line
per MXNet node, named after it.  Imports neither torch nor mxnet: ``mxcompat torch --check``
lists what a model needs from here alone.

Names.  A parameter or auxiliary state keeps its MXNet name as the attribute (and state_dict
key) of the module, except that PyTorch refuses a ``.`` in one: ``torch_name`` writes ``%`` as
``%25`` and ``.`` as ``%2E`` (percent-encoding), ``mxnet_name`` undoes it, so the mapping is
one to one both ways.  A node's local variable is its name with every character that cannot
be in a Python name made ``_`` (numbered if two meet); its original name is in a comment then.
"""

import json
import keyword
import re

# What the generated module's code sees; `mxops` is mxcompat/torch/runtime.py.
# The emitters register themselves in nodes.EMITTERS when their modules are imported.
from ..convert.shared import LOSS_HEADS, node_attrs
from . import layers, tensors  # noqa: F401
from .nodes import EMITTERS, Node, Unsupported, _bool, _tuple

PRELUDE = "import torch\nimport torch.nn.functional as F\n"


def torch_name(mx_name):
    return mx_name.replace("%", "%25").replace(".", "%2E")


def mxnet_name(name):
    return name.replace("%2E", ".").replace("%25", "%")


SUPPORTED = tuple(sorted(EMITTERS))


# --- the graph ------------------------------------------------------------------------------------


def load(text):
    """(nodes, heads) of a symbol's JSON, each node ``{"op", "name", "attrs", "inputs"}``."""
    graph = json.loads(text)
    nodes = []
    for node in graph["nodes"]:
        attrs = node_attrs(node)
        nodes.append(
            {
                "op": node["op"],
                "name": node["name"],
                "attrs": {k: v for k, v in attrs.items() if not k.startswith("__")},
                "inputs": [tuple(e[:2]) for e in node["inputs"]],
            }
        )
    return nodes, [tuple(h[:2]) for h in graph["heads"]]


def needed(nodes):
    """{op: [node names]} of the graph's operators, and the set of those not supported."""
    ops = {}
    for node in nodes:
        if node["op"] != "null":
            ops.setdefault(node["op"], []).append(node["name"])
    return ops, {op for op in ops if op not in EMITTERS}


def unsupported_message(op, nodes, detail=None):
    where = (
        "node %r" % nodes[0]
        if len(nodes) == 1
        else "%d nodes, the first %r"
        % (
            len(nodes),
            nodes[0],
        )
    )
    return "operator %r (%s)%s is not supported by mxcompat.to_torch; supported: %s" % (
        op,
        where,
        " with %s" % detail if detail else "",
        ", ".join(SUPPORTED),
    )


def _identifier(name, taken):
    base = re.sub(r"\W", "_", name)
    if not base or base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED:
        base = "v_" + base
    candidate, i = base, 1
    while candidate in taken:
        i += 1
        candidate = "%s_%d" % (base, i)
    taken.add(candidate)
    return candidate


_RESERVED = {"self", "torch", "F", "mxops", "_rec"}


def attribute(name):
    name = torch_name(name)
    if name.isidentifier() and not keyword.iskeyword(name):
        return "self." + name
    return "getattr(self, %r)" % name


class Program:
    """The generated forward: ``lines`` (one per node), the forward's ``inputs`` (names of
    the graph's inputs, label inputs last with a default of None), what each MXNet node's
    output is called (``outputs``: node name -> [expressions]) and the returned ``heads``."""

    def __init__(self, inputs, labels, lines, outputs, returns, params, buffers, record_only=()):
        self.inputs, self.labels, self.lines = inputs, labels, lines
        self.outputs, self.returns = outputs, returns
        self.params, self.buffers = params, buffers
        # Nodes whose value the forward does not need (an RNN's parameter concatenation: the
        # RNN takes the parameters themselves); the recording forward keeps them for verify.
        self.record_only = set(record_only)

    def forward_source(self, record=False, indent="    "):
        args = ["self"] + [_py(n) for n in self.inputs] + ["%s=None" % _py(n) for n in self.labels]
        if record:
            args.insert(1, "_rec")
        head = "def %s(%s):" % ("_mx_record" if record else "forward", ", ".join(args))
        body = []
        for node_name, var, expr, comment in self.lines:
            if not record and var in self.record_only:
                continue
            if comment:
                body.append("# %s" % comment)
            body.append("%s = %s" % (var, expr))
            if record:
                body.append("_rec[%r] = %s" % (node_name, var))
        body.append("return %s" % self.returns)
        return "\n".join([indent + head] + [indent * 2 + line for line in body])


def _py(name):
    return re.sub(r"\W", "_", name)


def _rnn_pieces(nodes, heads, params):
    """{RNN node index: [its parameters' names]} where the RNN's parameter vector is a
    ``_rnn_param_concat`` of parameters (each maybe through ``reshape(-1)``), as Gluon's RNN
    layers build it, used by nothing else; and the indices of those in-between nodes.  The
    RNN then takes the parameters as they are, concatenated and split by no one."""
    users = {}
    for node in nodes:
        for j, _ in node["inputs"]:
            users[j] = users.get(j, 0) + 1
    for j, _ in heads:
        users[j] = users.get(j, 0) + 1

    def only_here(j):
        return users.get(j) == 1

    pieces, skipped = {}, set()
    for i, node in enumerate(nodes):
        if node["op"] != "RNN" or len(node["inputs"]) < 2:
            continue
        c = node["inputs"][1][0]
        concat = nodes[c]
        if concat["op"] != "_rnn_param_concat" or not only_here(c):
            continue
        if str(concat["attrs"].get("dim", "0")).strip() != "0":
            continue
        names, between = [], [c]
        for j, k in concat["inputs"]:
            source = nodes[j]
            if source["op"] in ("Reshape", "reshape") and k == 0 and only_here(j):
                attrs = source["attrs"]
                flat = _tuple(attrs.get("shape")) == (-1,) and not _tuple(attrs.get("target_shape"))
                if not flat or _bool(attrs.get("reverse")):
                    break
                between.append(j)
                j, k = source["inputs"][0]
                source = nodes[j]
            if source["op"] != "null" or source["name"] not in params:
                break
            names.append(source["name"])
        else:
            pieces[i] = names
            skipped.update(between)
    return pieces, skipped


def program(nodes, heads, params, buffers, frozen_stats=()):
    """The ``Program`` of a graph whose parameter names are ``params`` (arguments) and
    ``buffers`` (auxiliary states); every other variable is an input.  An operator or
    attribute that is not mapped raises ``Unsupported``."""
    taken = set()
    exprs = {}  # node index -> [expression of each output]
    inputs, labels = [], []
    label_nodes = set()
    for node in nodes:
        if node["op"] in LOSS_HEADS and len(node["inputs"]) > 1:
            label_nodes.add(node["inputs"][1][0])
    lines = []
    outputs = {}
    rnn_pieces, record_only = _rnn_pieces(nodes, heads, params)
    for i, node in enumerate(nodes):
        name = node["name"]
        if node["op"] == "null":
            if name in params or name in buffers:
                exprs[i] = [attribute(name)]
            else:
                var = _identifier(name, taken)
                if var != _py(name):
                    raise Unsupported("null", name, "an input whose name is not a Python name")
                (labels if i in label_nodes else inputs).append(name)
                exprs[i] = [var]
            continue
        args = [exprs[j][k] for j, k in node["inputs"]]
        if i in rnn_pieces:
            args[1] = "[%s]" % ", ".join(attribute(p) for p in rnn_pieces[i])
        attrs = dict(node["attrs"])
        if node["op"] == "BatchNorm":
            attrs["__frozen_stats__"] = frozen_stats
        emitter = EMITTERS.get(node["op"])
        if emitter is None:
            raise Unsupported(node["op"], name)
        expr, count = emitter(Node(node["op"], name, attrs, args))
        var = _identifier(name, taken)
        comment = name if var != name else None
        lines.append((name, var, expr, comment))
        exprs[i] = [var] if count == 1 else ["%s[%d]" % (var, k) for k in range(count)]
        outputs[name] = exprs[i]
    for j, k in heads:
        if nodes[j]["op"] == "null" and k:
            raise Unsupported("null", nodes[j]["name"], "an output")
    results = [exprs[j][k] for j, k in heads]
    returns = results[0] if len(results) == 1 else "(%s)" % ", ".join(results)
    skipped = {exprs[j][0] for j in record_only}
    return Program(inputs, labels, lines, outputs, returns, params, buffers, skipped)


def class_source(prog, class_name, shapes, frozen, doc):
    """The module's class: ``__init__`` registers every parameter (``frozen`` ones with
    requires_grad=False) and buffer by name and shape (values are loaded afterwards), then
    the forward."""
    lines = ["class %s(torch.nn.Module):" % class_name, '    """%s"""' % doc, ""]
    lines.append("    def __init__(self):")
    lines.append("        super().__init__()")
    for name in prog.params:
        lines.append(
            "        self.register_parameter(%r, torch.nn.Parameter(torch.empty(%r)%s))"
            % (
                torch_name(name),
                tuple(shapes[name]),
                ", requires_grad=False" if name in frozen else "",
            )
        )
    for name in prog.buffers:
        lines.append(
            "        self.register_buffer(%r, torch.empty(%r))"
            % (torch_name(name), tuple(shapes[name]))
        )
    if not prog.params and not prog.buffers:
        lines.append("        pass")
    lines.append("")
    lines.append(prog.forward_source())
    return "\n".join(lines) + "\n"
