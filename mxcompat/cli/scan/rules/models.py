"""The rules of ``mxcompat scan`` for Module and Gluon code: names, binding, frozen weights,
gradients, parameter files."""

import libcst as cst

from .base import Finding, dotted, keyword, number_value, rule, string_value

_NAME_KEYWORDS = ("data_names", "label_names", "state_names", "fixed_param_names")


@rule(
    "MXC001",
    "bare-string-names",
    cst.Call,
    trap=("bare_names", "fixed_param_names"),
    fixable=True,
    summary="a bare string as data/label/state/fixed_param names",
)
def _bare_names(node, ctx):
    for arg in node.args:
        if arg.keyword is None or arg.keyword.value not in _NAME_KEYWORDS:
            continue
        value = arg.value
        if not isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
            continue
        text = ctx.code(value)
        inner = value.with_changes(lpar=(), rpar=())
        if value.lpar:
            # ('kw') is the string 'kw': the comma the author meant makes it a tuple.
            fixed = cst.Tuple(
                [cst.Element(inner, comma=cst.Comma())], lpar=value.lpar, rpar=value.rpar
            )
        else:
            fixed = cst.List([cst.Element(inner)])
        yield Finding(
            "MXC001",
            "%s=%s is one string, and MXNet reads each of its characters as a name (every "
            "1.x release: 'not found in symbol.list_arguments()'); mxcompat reads it as one "
            "name with a warning (patch bare_names); fix: %s=%s"
            % (arg.keyword.value, text, arg.keyword.value, ctx.code_of(fixed)),
            value,
            fixed,
        )


def _is_module_load(call):
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "load"
        and (dotted(call.func.value) or "").rsplit(".", 1)[-1] == "Module"
    )


@rule(
    "MXC002",
    "load-export-bind-label",
    cst.Call,
    trap=("labels", "KeyError: 'softmax_label'"),
    summary="Module.load of a Gluon export, then bind with label_shapes",
)
def _load_then_bind(node, ctx):
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "export" and node.args:
        ctx.exports.add(ctx.code(node.args[0].value))
        return
    if not (
        isinstance(func, cst.Attribute)
        and func.attr.value == "bind"
        and isinstance(func.value, cst.Name)
    ):
        return
    shapes = keyword(node, "label_shapes")
    if shapes is None or (isinstance(shapes.value, cst.Name) and shapes.value.value == "None"):
        return
    loaded = ctx.bound(func.value.value)
    if not _is_module_load(loaded) or keyword(loaded, "label_names") is not None:
        return
    if not loaded.args or ctx.code(loaded.args[0].value) not in ctx.exports:
        return
    yield Finding(
        "MXC002",
        "%s comes from Module.load(%s, ...) of a Gluon export, which takes no label, while "
        "Module.load keeps label_names=('softmax_label',): this bind(label_shapes=...) raises "
        "KeyError: 'softmax_label' (every 1.x release); mxcompat drops the label with a "
        "warning (patch labels); fix: Module.load(..., label_names=None) and bind without "
        "label_shapes" % (func.value.value, ctx.code(loaded.args[0].value)),
        node,
        None,
    )


def _names_a_weight(node, ctx):
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        key = string_value(index.value) if isinstance(index, cst.Index) else None
        return key is not None and key.endswith("weight")
    name = dotted(node)
    return name is not None and name.endswith("weight")


@rule(
    "MXC003",
    "grad-req-null-weight",
    cst.Assign,
    trap=(None, "grad_req = 'null'"),
    summary="grad_req = 'null' on a Dense/FullyConnected weight",
)
def _grad_req_null(node, ctx):
    if string_value(node.value) != "null":
        return
    for target in node.targets:
        t = target.target
        if (
            isinstance(t, cst.Attribute)
            and t.attr.value == "grad_req"
            and _names_a_weight(t.value, ctx)
        ):
            yield Finding(
                "MXC003",
                "%s = 'null': if this is the weight of a Dense/FullyConnected layer with a "
                "bias, the bias stops training too on MXNet 1.7-1.9 CPU wheels "
                "(oneDNN's backward skips the bias "
                "gradient; no error); mxcompat leaves grad_req alone; fix: "
                "mxcompat.freeze(%s.name), which holds the weight alone"
                % (ctx.code(t), ctx.code(t.value)),
                node,
                None,
            )


@rule(
    "MXC010",
    "fixed-weight-names",
    cst.Call,
    trap=("onednn_fc_bias", "fixed_param_names=['fc1_weight']"),
    summary="a weight in fixed_param_names (its bias stops too on oneDNN builds)",
)
def _fixed_weight_names(node, ctx):
    arg = keyword(node, "fixed_param_names")
    if arg is None or not isinstance(arg.value, (cst.List, cst.Tuple)):
        return
    for element in arg.value.elements:
        name = string_value(element.value)
        if name is not None and name.endswith("weight"):
            yield Finding(
                "MXC010",
                "fixed_param_names holds %r: on MXNet 1.7-1.9 CPU wheels a FullyConnected "
                "weight fixed this way stops its bias too (oneDNN's backward skips the bias "
                "gradient; no error); mxcompat keeps the weight fixed and the bias training "
                "(patch onednn_fc_bias); without mxcompat, freeze the weight with "
                "mxcompat.freeze(%r)" % (name, name),
                element.value,
                None,
            )


def _is_gradient(node):
    # p.grad(), p.grad, p.list_grad()[i], exe.grad_dict['w'], exe.grad_arrays[i]
    if isinstance(node, cst.Call):
        node = node.func
        return isinstance(node, cst.Attribute) and node.attr.value in ("grad", "list_grad")
    if isinstance(node, cst.Attribute):
        return node.attr.value in ("grad", "grad_dict", "grad_arrays")
    if isinstance(node, cst.Subscript):
        return _is_gradient(node.value)
    return False


@rule(
    "MXC004",
    "zeroed-gradient",
    cst.Assign,
    trap=("freeze", "zeroed gradient"),
    summary='a weight kept "fixed" by zeroing its gradient',
)
def _zeroed_gradient(node, ctx):
    if number_value(node.value) != 0:
        return
    for target in node.targets:
        t = target.target
        if isinstance(t, cst.Subscript) and _is_gradient(t.value):
            yield Finding(
                "MXC004",
                "%s = 0 does not keep a weight fixed: momentum and weight decay still move "
                "it (every release); fix: mxcompat.freeze(name), held bit for bit on every "
                "update path (or fixed_param_names at Module construction)" % ctx.code(t),
                node,
                None,
            )


_GLUON_MAKERS = ("nn.", "gluon.", "model_zoo.", "rnn.", "contrib.nn.")
_GLUON_CLASSES = (
    "HybridSequential",
    "Sequential",
    "SymbolBlock",
    "HybridBlock",
    "Block",
    "Dense",
    "Conv2D",
    "Embedding",
    "get_model",
)


def _receiver_kind(node, ctx):
    """'gluon', 'module' or None (unknown) for the receiver of save_params/load_params."""
    if isinstance(node, cst.Name):
        node = ctx.bound(node.value)
    if not isinstance(node, cst.Call):
        return None
    func = dotted(node.func) or ""
    last = func.rsplit(".", 1)[-1]
    if last == "Module" or _is_module_load(node) or ".mod." in "." + func:
        return "module"
    if any("." + m in "." + func for m in _GLUON_MAKERS) or last in _GLUON_CLASSES:
        return "gluon"
    return None


@rule(
    "MXC005",
    "gluon-save-load-params",
    cst.Call,
    fixable=True,
    summary="Gluon save_params/load_params (deprecated: save_parameters/load_parameters)",
)
def _save_load_params(node, ctx):
    func = node.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("save_params", "load_params")):
        return
    kind = _receiver_kind(func.value, ctx)
    if kind == "module":
        return  # Module.save_params/load_params are Module's own, not deprecated
    new = func.attr.value.replace("_params", "_parameters")
    fixed = (
        node.with_changes(func=func.with_changes(attr=cst.Name(new))) if kind == "gluon" else None
    )
    yield Finding(
        "MXC005",
        "%s.%s is deprecated for Gluon Blocks since MXNet 1.3 (it warns on every call, an "
        "error under -W error); fix: %s.%s%s"
        % (
            ctx.code(func.value),
            func.attr.value,
            ctx.code(func.value),
            new,
            "" if kind else " (if %s is a Gluon Block)" % ctx.code(func.value),
        ),
        node,
        fixed,
    )
