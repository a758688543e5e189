"""The rules of ``mxcompat scan``: each legacy trap that can be seen in source, as a check over
one libcst node.

A rule is a function registered with ``@rule(code, node type, ...)``: given the node and the
scan's context (the names bound so far in the enclosing scope, the code of a node, its
position), it returns the findings, each with the fix when the fix is certain (the rewritten
node), else without one.  ``trap`` names the entry of the one trap list (``mxcompat._core.traps``)
the rule finds in code: the patch and a few words of its symptom, checked by a test.
"""

import collections

import libcst as cst

from ..._core import traps as _traps

Rule = collections.namedtuple("Rule", "code name node_type trap summary fixable check")
Finding = collections.namedtuple("Finding", "code message node fix")

RULES = []

# Traps no source line shows: they depend on the installed stack or on what a run does, and
# the pytest plugin's "traps handled" list or `mxcompat check` finds them instead.
RUNTIME_ONLY = {
    ("labels", "UserWarning: You created Module"): "a warning MXNet prints at run time",
    ("labels", "label_names=['label']"): "the symbol's label name is known only at run time",
    ("numpy_names", "has no attribute 'bool'"): "MXNet's own code on the installed NumPy",
    ("numpy_names", "np.PZERO"): "MXNet's own code on the installed NumPy",
    ("numpy2", "Invalid Parameter format"): "NumPy scalars reach MXNet at run time",
    ("convert", "mod.save_params"): "which prefixes differ is known only at run time",
    ("frozen_statistics", "BatchNorm running mean"): "training moves them; no line says so",
    ("fixed_param_names", "module._fixed_param_names"): "only wrong together with freeze()",
    ("int_division", "the same death after"): "the divisor's values are known at run time",
    ("unbound_get_params", "after `Module.load"): "fixed by mxcompat on every release",
    ("unbound_get_params", "never initialised"): "a run-time state",
    ("trainer_kvstore_init", "distributed Gluon job"): "a race between workers",
    ("dataloader_teardown", "multi-worker"): "a race in the standard library's Pool",
    ("onnx", "Onnx and protobuf"): "the installed onnx",
    ("ndarray_to_numpy", "mx.test_utils.same"): "the installed NumPy",
    ("ndarray_to_numpy", "Could not convert"): "the installed NumPy",
    ("python_oo", "sequence item 0"): "the interpreter's -OO flag",
    (None, "Error in sitecustomize"): "the environment of a child process",
    (None, "printed twice"): "an older mxcompat",
    (None, "mxcompat's import hook"): "an older mxcompat",
    (None, "split_and_load"): "the release's documented behaviour",
}


def find_trap(key):
    """The one entry of ``_traps.TRAPS`` that ``key`` (patch, words of the symptom) names."""
    patch, words = key
    found = [t for t in _traps.TRAPS if t.patch == patch and words in t.symptom]
    if len(found) != 1:
        raise LookupError("%r names %d traps" % (key, len(found)))
    return found[0]


def rule(code, name, node_type, summary, trap=None, fixable=False):
    def register(check):
        RULES.append(Rule(code, name, node_type, trap, summary, fixable, check))
        return check

    return register


# --- helpers over nodes ------------------------------------------------------------------------


def dotted(node):
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else base + "." + node.attr.value
    return None


def keyword(call, name):
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def string_value(node):
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    return None


def number_value(node):
    negative = False
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node, negative = node.expression, True
    if isinstance(node, (cst.Integer, cst.Float)):
        value = node.evaluated_value
        return -value if negative else value
    return None


_INT_DTYPES = {"int8", "uint8", "int16", "int32", "int64", "int"}


def _is_int_dtype(node):
    text = string_value(node)
    if text is None:
        name = dotted(node)
        text = name.rsplit(".", 1)[-1] if name else None
    return text in _INT_DTYPES


def is_int_ndarray(node, ctx):
    """Whether ``node`` is certainly an integer NDArray: ``x.astype('int32')``, an ``nd``
    array made with an integer dtype, or a name bound to one of them in this scope."""
    if isinstance(node, cst.Name):
        value = ctx.bound(node.value)
        return value is not None and value is not node and is_int_ndarray(value, ctx)
    if not isinstance(node, cst.Call):
        return False
    func = dotted(node.func) or ""
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "astype":
        return bool(node.args) and _is_int_dtype(node.args[0].value)
    dtype = keyword(node, "dtype")
    return (
        dtype is not None
        and _is_int_dtype(dtype.value)
        and (func.startswith(("mx.nd.", "nd.", "mxnet.nd.", "mx.ndarray.", "mxnet.ndarray.")))
    )


# --- the rules ---------------------------------------------------------------------------------

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


@rule(
    "MXC006",
    "distutils-version",
    (cst.ImportFrom, cst.Import),
    trap=("distutils", "No module named 'distutils'"),
    summary="distutils.version (gone on Python 3.12)",
)
def _distutils(node, ctx):
    if isinstance(node, cst.ImportFrom):
        module = dotted(node.module) if node.module is not None else None
        names = (
            () if isinstance(node.names, cst.ImportStar) else [dotted(a.name) for a in node.names]
        )
        hit = module == "distutils.version" or (module == "distutils" and "version" in names)
    else:
        hit = any(dotted(a.name) == "distutils.version" for a in node.names)
    if hit:
        yield Finding(
            "MXC006",
            "distutils is gone from Python 3.12 (without setuptools); mxcompat serves "
            "distutils.version only while MXNet needs it; fix: from looseversion import "
            "LooseVersion (the same class, package looseversion) or packaging.version",
            node,
            None,
        )


def _divisor_truncates_to_zero(node):
    value = number_value(node)
    return value is not None and int(value) == 0


@rule(
    "MXC007",
    "int-ndarray-float-division",
    (cst.BinaryOperation, cst.AugAssign),
    trap=("int_division", "Floating point exception"),
    summary="an integer NDArray divided by a float literal that truncates to 0",
)
def _int_division(node, ctx):
    if isinstance(node, cst.BinaryOperation):
        ok = isinstance(node.operator, cst.Divide)
        left, right = node.left, node.right
    else:
        ok = isinstance(node.operator, cst.DivideAssign)
        left, right = node.target, node.value
    if ok and _divisor_truncates_to_zero(right) and is_int_ndarray(left, ctx):
        yield Finding(
            "MXC007",
            "%s is an integer NDArray: MXNet converts %s to its integer dtype (0) and the "
            "process dies of SIGFPE (every 1.x release); mxcompat raises ZeroDivisionError "
            "instead (patch int_division); fix: divide a float copy, %s.astype('float32')"
            % (ctx.code(left), ctx.code(right), ctx.code(left)),
            node,
            None,
        )


@rule(
    "MXC008",
    "scalar-of-asnumpy",
    cst.Call,
    fixable=True,
    summary="float()/int() of an NDArray's asnumpy()",
)
def _scalar_of_asnumpy(node, ctx):
    if not (
        isinstance(node.func, cst.Name)
        and node.func.value in ("float", "int")
        and len(node.args) == 1
        and node.args[0].keyword is None
    ):
        return
    arg = node.args[0].value
    if not (
        isinstance(arg, cst.Call)
        and not arg.args
        and isinstance(arg.func, cst.Attribute)
        and arg.func.attr.value == "asnumpy"
    ):
        return
    item = cst.Call(cst.Attribute(arg, cst.Name("item")))
    fixed = node.with_changes(args=[node.args[0].with_changes(value=item)])
    yield Finding(
        "MXC008",
        "%s: asnumpy() is an array of shape (1,) or more, which NumPy >= 2.4 refuses to "
        "convert (TypeError: only 0-dimensional arrays can be converted; a "
        "DeprecationWarning from 1.25); fix: %s" % (ctx.code(node), ctx.code_of(fixed)),
        node,
        fixed,
    )


def _removed_numpy_names():
    from ...legacy_numpy import REPLACEMENTS

    return {name: REPLACEMENTS[name][1] for name in REPLACEMENTS}


@rule(
    "MXC009",
    "numpy-removed-name",
    cst.Attribute,
    summary="a NumPy name today's NumPy removed (ruff's NPY201 rewrites them)",
)
def _numpy_name(node, ctx):
    base = dotted(node.value)
    if base is None or base not in ctx.numpy_aliases:
        return
    replacement = ctx.removed_numpy_names.get(node.attr.value)
    if replacement is None:
        return
    yield Finding(
        "MXC009",
        "%s is gone from today's NumPy (use %s); `ruff check --select NPY201 --fix` rewrites "
        "NumPy's removed names, and MXCOMPAT_NUMPY_LEGACY=1 serves them meanwhile"
        % (ctx.code(node), replacement),
        node,
        None,
    )


BY_CODE = {r.code: r for r in RULES}


def markdown():
    """The rules table of the docs' scan page (docs/scan.md renders it at build time)."""
    rows = ["| code | name | finds | trap | --fix |", "|---|---|---|---|---|"]
    for r in RULES:
        trap = find_trap(r.trap).symptom if r.trap else "(not in the trap list)"
        rows.append(
            "| %s | `%s` | %s | %s | %s |"
            % (r.code, r.name, r.summary, trap.replace("|", "\\|"), "yes" if r.fixable else "no")
        )
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    # python -m mxcompat.cli.scan.rules: the rules table docs/scan.md shows.
    import sys

    sys.stdout.write(markdown())
