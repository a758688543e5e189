"""Label names the symbol does not have are dropped, so a Gluon export binds with labels.

``Module.load`` of a ``HybridBlock.export`` keeps MXNet's default
``label_names=('softmax_label',)``; the exported symbol has no such input, and
``bind(label_shapes=it.provide_label)`` dies with ``KeyError: 'softmax_label'`` deep in the
executor group.  mxcompat keeps only the label names and label shapes that are arguments of
the symbol, at construction, ``bind`` and ``reshape`` (which ``forward`` calls when the batch
shape changes), and says once which names it dropped, instead of MXNet's warning on every
module.  Data names are left alone: a missing data name fails exactly as in MXNet.
"""
from ._log import warn_once
from ._patching import Patch, Target, register
from ._util import bind_arguments, symbol_arguments, unpack_sym_gen


def _drop(label_names, arguments):
    kept = [n for n in label_names if n in arguments]
    dropped = [n for n in label_names if n not in arguments]
    return kept, dropped


def _warn_dropped(dropped):
    warn_once(("labels-dropped", tuple(dropped)),
              "label name(s) %s are not arguments of the symbol (it takes no such label); "
              "mxcompat drops them from label_names and label_shapes"
              % ", ".join(map(repr, dropped)))


def _label_name(desc):
    # DataDesc or a (name, shape) pair.
    return getattr(desc, "name", None) or desc[0]


def _wrap_module_init(wrapped, instance, args, kwargs):
    bound = bind_arguments(wrapped, args, kwargs)
    label_names = bound.arguments.get("label_names", ("softmax_label",))
    arguments = symbol_arguments(bound.arguments.get("symbol"))
    if arguments is not None and label_names is not None and not isinstance(label_names, str):
        kept, dropped = _drop(list(label_names), arguments)
        if dropped:
            _warn_dropped(dropped)
            bound.arguments["label_names"] = kept
    return wrapped(*bound.args, **bound.kwargs)


def _filter_label_shapes(module, label_shapes):
    """Drop label shapes (and the module's label names) that are not symbol arguments."""
    arguments = symbol_arguments(module._symbol)
    if arguments is None:
        return label_shapes
    # A module built before mxcompat was patched may still hold the names.
    kept_names, dropped = _drop(module._label_names, arguments)
    if label_shapes is not None:
        shapes = list(label_shapes)
        kept_shapes = [d for d in shapes if _label_name(d) in arguments]
        dropped += [_label_name(d) for d in shapes
                    if _label_name(d) not in arguments and _label_name(d) not in dropped]
        # The executor group asserts a non-empty list: no labels left means None.
        label_shapes = kept_shapes or None
    if dropped:
        _warn_dropped(dropped)
        module._label_names = kept_names
    return label_shapes


def _wrap_shapes_method(wrapped, instance, args, kwargs):
    # Module.bind(data_shapes, label_shapes=None, ...) and Module.reshape(data_shapes,
    # label_shapes=None) share the argument name.
    bound = bind_arguments(wrapped, args, kwargs)
    given = bound.arguments.get("label_shapes")
    filtered = _filter_label_shapes(instance, given)
    bound.arguments["label_shapes"] = filtered
    result = wrapped(*bound.args, **bound.kwargs)
    if given and filtered is None and instance._label_shapes is None:
        # The executor group needs None, but Module.forward zips its label shapes with a
        # batch's labels when the batch size changes: [] keeps that path working.
        instance._label_shapes = []
    return result


def _wrap_call_sym_gen(wrapped, instance, args, kwargs):
    # BucketingModule takes its label names from sym_gen for every bucket.
    result = wrapped(*args, **kwargs)
    unpacked = unpack_sym_gen(result)
    if unpacked is None:
        return result
    symbol, data_names, label_names = unpacked
    arguments = symbol_arguments(symbol)
    if arguments is None or label_names is None or isinstance(label_names, str):
        return result
    kept, dropped = _drop(list(label_names), arguments)
    if not dropped:
        return result
    _warn_dropped(dropped)
    return symbol, data_names, kept


PATCH = register(Patch(
    "labels",
    "Label names and label shapes the symbol does not have are dropped.",
    targets=[
        Target("mxnet.module.module", "Module.__init__", _wrap_module_init),
        Target("mxnet.module.module", "Module.bind", _wrap_shapes_method),
        Target("mxnet.module.module", "Module.reshape", _wrap_shapes_method),
        Target("mxnet.module.bucketing_module", "BucketingModule._call_sym_gen",
               _wrap_call_sym_gen),
    ],
))
