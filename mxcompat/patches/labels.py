"""Label names of a symbol that takes no label are dropped; a wrong label name is an error.

``Module.load`` of a ``HybridBlock.export`` keeps MXNet's default
``label_names=('softmax_label',)``; the exported symbol takes no label, and
``bind(label_shapes=it.provide_label)`` dies with ``KeyError: 'softmax_label'`` deep in the
executor group.  For a symbol that takes no label mxcompat drops the label names and label
shapes that are not arguments of it, at construction, ``bind`` and ``reshape`` (which
``forward`` calls when the batch shape changes), and says once which names it dropped,
instead of MXNet's warning on every module.

A symbol that *does* take a label is never changed: a label name that is not one of its
arguments is a mistake (``label_names=('label',)`` for a ``SoftmaxOutput`` named
``softmax``).  MXNet only warns at ``Module(...)`` and makes the label input it was not told
about a *parameter* of the module: ``bind(label_shapes=...)`` then fails with ``KeyError:
'label'``, ``init_params`` with "Unknown initialization pattern for softmax_label", and a
module whose parameters were loaded trains against a constant (the batches' labels are
ignored).  mxcompat raises one ``ValueError`` instead, naming the symbol's label inputs and
the fix, where the mistake is first known:

* at ``Module(..., label_names=...)`` (``Module.load(..., label_names=...)`` too), and where a
  ``BucketingModule``'s ``sym_gen`` returns the names, when the caller named them;
* at ``bind``/``reshape`` when ``label_shapes`` carry a name the symbol does not have (where
  MXNet raises its ``KeyError``).

MXNet's *default* ``('softmax_label',)`` on a symbol whose label has another name (a
``LinearRegressionOutput`` checkpoint loaded for inference) is not an error at construction:
MXNet warns, and binding without labels works there, so it keeps working.

``ValueError`` is what MXNet raises for an unknown data name (``_check_input_names``), so a
caller's ``except ValueError`` around ``Module(...)`` keeps working; the ``KeyError`` at bind
came from a dict lookup inside the executor group, not from an interface.

"Takes a label" is read from the graph, never from the names the caller passed.  A label
input is an argument of the symbol, other than its data and state names, that

* feeds the label input of an operator that reads one (``label_positions``: SoftmaxOutput, the
  regression outputs, SVMOutput, CTC loss, softmax_cross_entropy, MultiBoxTarget; the test
  suite checks this list against every operator the running MXNet registers), or
* is named ``*label``: the name MXNet gives a label it creates (``<op>_label``, Custom
  operators included) and MXNet's own test for an input (``FeedForward._is_data_arg``).  It
  also covers a label reshaped before the loss, or read by a loss made of plain operators.

A Gluon export or an inference graph has neither: its arguments are its inputs and its
learnable parameters.  Data names are left alone: a missing data name fails exactly as in
MXNet.
"""

import json

from .._core.log import warn_once
from .._core.registry import Patch, Target, patched, record, register
from .._core.util import bind_arguments, symbol_arguments, unpack_sym_gen
from ..convert.shared import LOSS_HEADS, node_attrs

PATCH = "labels"

# Operators whose input 1 is a label: the loss heads, and the other names MXNet 1.3.1 ... 1.9.1
# register for one.
_LABEL_AT_1 = frozenset(
    LOSS_HEADS
    + (
        "_sparse_LinearRegressionOutput",
        "_sparse_LogisticRegressionOutput",
        "_sparse_MAERegressionOutput",
        "softmax_cross_entropy",
        "_contrib_MultiBoxTarget",
        "_npx_multibox_target",
    )
)
# CTC loss: (data, label[, data_lengths][, label_lengths]); the optional inputs exist only when
# their use_* flag is set.
_CTC = frozenset(("CTCLoss", "ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"))
_LABEL_OPS = _LABEL_AT_1 | _CTC
_DEFAULT_LABEL_NAMES = ("softmax_label",)


def _flag(attrs, name):
    return str(attrs.get(name, "")).strip().lower() in ("true", "1")


def label_positions(op, attrs):
    """The input positions of an operator node that are labels (``()`` for most operators)."""
    if op in _CTC:
        positions = [1]
        if _flag(attrs, "use_label_lengths"):
            positions.append(3 if _flag(attrs, "use_data_lengths") else 2)
        return tuple(positions)
    return (1,) if op in _LABEL_AT_1 else ()


def label_inputs(symbol, inputs=(), arguments=None):
    """The label inputs of ``symbol`` (see the module docstring), in argument order.

    ``inputs``: the data and state names, which are never labels."""
    if arguments is None:
        arguments = list(symbol.list_arguments())
    candidates = [a for a in arguments if a not in inputs]
    free = set(candidates)
    found = set(a for a in candidates if a.endswith("label"))
    text = symbol.tojson()
    # Parsing the graph costs milliseconds on a large export; one without a loss operator
    # (every Gluon export) is not parsed at all.
    if any('"%s"' % op in text for op in _LABEL_OPS):
        nodes = json.loads(text)["nodes"]
        for node in nodes:
            attrs = node_attrs(node)
            for pos in label_positions(node.get("op"), attrs):
                if pos < len(node["inputs"]):
                    source = nodes[node["inputs"][pos][0]]
                    if source.get("op") == "null" and source["name"] in free:
                        found.add(source["name"])
    return [a for a in candidates if a in found]


def _module_label_inputs(module, symbol, inputs, arguments):
    """``label_inputs`` for a module's symbol, computed once per module: ``Module.load`` then
    ``bind`` asks twice, and serialising a large graph costs milliseconds."""
    cached = getattr(module, "_mxcompat_label_inputs", None)
    if cached is not None and cached[0] is symbol and cached[1] == inputs:
        return cached[2]
    labels = label_inputs(symbol, inputs, arguments)
    module._mxcompat_label_inputs = (symbol, inputs, labels)
    return labels


def _names(value):
    """A names argument as a list: ``None`` is no name, a bare string one name; ``None`` for
    anything that is not a sequence (MXNet then fails in its own words)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    try:
        return list(value)
    except TypeError:
        return None


def _label_names(value):
    """``label_names`` as the names MXNet will use, or ``None`` when mxcompat leaves it alone:
    a bare string is one name only when the ``bare_names`` patch makes it so (it runs
    inside this one); without it MXNet splits it into characters, as it always did."""
    if isinstance(value, str) and "bare_names" not in patched():
        return None
    return _names(value)


def _quoted(names):
    return ", ".join(map(repr, names))


def _warn_dropped(dropped):
    record(PATCH)
    warn_once(
        ("labels-dropped", tuple(dropped)),
        "label name(s) %s are not arguments of the symbol, and the symbol takes no "
        "label (none of its arguments feeds the label of a loss operator such as "
        "SoftmaxOutput, or is named *label); mxcompat drops them from label_names and "
        "label_shapes" % _quoted(dropped),
    )


def _mistake(where, unknown, labels, verb="Pass"):
    """The error for label names a label-taking symbol does not have."""
    if len(labels) == 1:
        whose = "whose label input is %r" % labels[0]
        iterator = (
            "give the data iterator's label the same name (e.g. NDArrayIter(..., "
            "label_name=%r))" % labels[0]
        )
    else:
        whose = "whose label inputs are %s" % _quoted(labels)
        iterator = (
            "give the data iterator's labels the same names (e.g. NDArrayIter(data, "
            "label={%s}))" % ", ".join("%r: ..." % n for n in labels)
        )
    what = (
        "%r is not an input" % unknown[0]
        if len(unknown) == 1
        else "%s are not inputs" % _quoted(unknown)
    )
    record(PATCH)
    return ValueError(
        "mxcompat: %s: %s of the symbol, %s. %s label_names=%r and %s."
        % (where, what, whose, verb, list(labels), iterator)
    )


def _wrap_module_init(wrapped, instance, args, kwargs):
    bound = bind_arguments(wrapped, args, kwargs)
    given = "label_names" in bound.arguments
    value = bound.arguments.get("label_names", _DEFAULT_LABEL_NAMES)
    names = _label_names(value)
    symbol = bound.arguments.get("symbol")
    arguments = symbol_arguments(symbol) if names else None
    if arguments is not None:
        unknown = [n for n in names if n not in arguments]
        if unknown:
            inputs = (_names(bound.arguments.get("data_names", ("data",))) or []) + (
                _names(bound.arguments.get("state_names")) or []
            )
            labels = _module_label_inputs(instance, symbol, inputs, arguments)
            if not labels:
                _warn_dropped(unknown)
                bound.arguments["label_names"] = [n for n in names if n in arguments]
            elif given:
                raise _mistake("Module(..., label_names=%r)" % (value,), unknown, labels)
            # MXNet's default on a symbol with another label: left to MXNet (see above).
    return wrapped(*bound.args, **bound.kwargs)


def _label_name(desc):
    # DataDesc or a (name, shape) pair.
    return getattr(desc, "name", None) or desc[0]


def _filter_label_shapes(module, label_shapes, where):
    """Label shapes for a bind/reshape: unchanged, or without the names of a symbol that
    takes no label (then also dropped from the module's label names); raises on a label a
    label-taking symbol does not have."""
    arguments = symbol_arguments(module._symbol)
    if arguments is None:
        return label_shapes
    shapes = list(label_shapes) if label_shapes is not None else []
    # The executor group asserts a non-empty list: no labels means None.
    kept = [d for d in shapes if _label_name(d) in arguments] or None
    unknown_shapes = [_label_name(d) for d in shapes if _label_name(d) not in arguments]
    # A module built before mxcompat was patched may still hold the names.
    unknown_names = [n for n in module._label_names if n not in arguments]
    if not unknown_shapes and not unknown_names:
        return kept
    inputs = list(module._data_names) + list(getattr(module, "_state_names", None) or [])
    labels = _module_label_inputs(module, module._symbol, inputs, arguments)
    if labels:
        if unknown_shapes:
            raise _mistake("%s(label_shapes=...)" % where, unknown_shapes, labels)
        # Only the module's names are off (MXNet's default): MXNet's behaviour, unchanged.
        return kept
    _warn_dropped(unknown_names + [n for n in unknown_shapes if n not in unknown_names])
    module._label_names = [n for n in module._label_names if n in arguments]
    return kept


def _wrap_shapes_method(where):
    # Module.bind(data_shapes, label_shapes=None, ...) and Module.reshape(data_shapes,
    # label_shapes=None) share the argument name.
    def wrapper(wrapped, instance, args, kwargs):
        bound = bind_arguments(wrapped, args, kwargs)
        given = bound.arguments.get("label_shapes")
        filtered = _filter_label_shapes(instance, given, where)
        bound.arguments["label_shapes"] = filtered
        result = wrapped(*bound.args, **bound.kwargs)
        if given and filtered is None and instance._label_shapes is None:
            # The executor group needs None, but Module.forward zips its label shapes with a
            # batch's labels when the batch size changes: [] keeps that path working.
            instance._label_shapes = []
        return result

    return wrapper


def _wrap_call_sym_gen(wrapped, instance, args, kwargs):
    # BucketingModule takes its label names from sym_gen for every bucket (bare_names, which
    # runs inside this wrapper, has already made a bare string one name).
    result = wrapped(*args, **kwargs)
    unpacked = unpack_sym_gen(result)
    if unpacked is None:
        return result
    symbol, data_names, label_names = unpacked
    names = None if isinstance(label_names, str) else _names(label_names)
    arguments = symbol_arguments(symbol) if names else None
    if arguments is None:
        return result
    unknown = [n for n in names if n not in arguments]
    if not unknown:
        return result
    inputs = (_names(data_names) or []) + list(getattr(instance, "_state_names", None) or [])
    labels = label_inputs(symbol, inputs, arguments)
    if labels:
        raise _mistake(
            "sym_gen returned label_names=%r" % (label_names,), unknown, labels, verb="Return"
        )
    _warn_dropped(unknown)
    return symbol, data_names, [n for n in names if n in arguments]


register(
    Patch(
        PATCH,
        "Label names of a symbol that takes no label are dropped; a wrong label name is an error.",
        targets=[
            Target("mxnet.module.module", "Module.__init__", _wrap_module_init),
            Target("mxnet.module.module", "Module.bind", _wrap_shapes_method("Module.bind")),
            Target("mxnet.module.module", "Module.reshape", _wrap_shapes_method("Module.reshape")),
            Target(
                "mxnet.module.bucketing_module", "BucketingModule._call_sym_gen", _wrap_call_sym_gen
            ),
        ],
    )
)
