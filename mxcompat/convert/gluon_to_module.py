"""Gluon -> Module: ``HybridBlock.to_module()`` makes a ``Module`` of the block's graph
holding its parameters, unbound or bound (values copied once, straight into the executors),
optionally with a loss head so that it can ``fit``.
"""

from __future__ import annotations

from .._core import facts
from .._core.conversion import check_flag, fail, import_mxnet, quoted
from ._common import _check_bind_shapes, _check_contexts, _check_descs, _check_names_list
from .graph import _add_loss, _block_graph, _block_params
from .params import _grads_fit, _Placement, _reset_trainer_kvstore

# Names for annotations only: type checkers take this block as run, Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, List, Sequence, Tuple, Union

    from mxnet.context import Context
    from mxnet.gluon import HybridBlock
    from mxnet.io import DataDesc
    from mxnet.module import Module

    # A (name, shape) pair, or MXNet's own description of an input.
    Shape = Union[Tuple[str, Tuple[int, ...]], DataDesc]
    Contexts = Union[Context, List[Context], Tuple[Context, ...]]
    # A list or tuple (another sequence is refused: a str would be read letter by letter).
    Names = Union[List[str], Tuple[str, ...]]
    Shapes = Sequence[Shape]


def _shape_names(shapes):
    return [getattr(d, "name", None) or d[0] for d in shapes]


def to_module(
    block: HybridBlock,
    data_names: Names | None = None,
    label_names: Names | None = None,
    data_shapes: Shapes | None = None,
    label_shapes: Shapes | None = None,
    context: Contexts | None = None,
    copy: bool = True,
    loss: str | Callable[..., Any] | None = None,
    for_training: bool | None = None,
) -> Module:
    """A ``Module`` of ``block``'s network holding its parameters (arg and aux).

    The symbol is built in memory: the block's cached graph if it was hybridized and run,
    else the graph of calling it on symbol variables (nested blocks, BatchNorm, Dropout,
    several inputs and outputs).  ``data_names`` name the block's inputs (default: the names
    in ``data_shapes``, else ``('data',)`` for one input, ``('data0', 'data1', ...)`` for a
    cached graph of several, as ``HybridBlock.export`` names them).  Without ``loss``,
    ``label_names`` are further inputs of the block (e.g. a block that computes its own loss).

    ``loss``: ``'softmax'``, ``'linear'``, ``'logistic'``, ``'mae'``, ``'svm'`` or a callable
    ``(output_symbol, label_symbol) -> symbol`` adds that head on the output, with label
    ``label_names[0]`` (default ``'softmax_label'``), so the module can ``fit``.

    ``data_shapes`` (as for ``Module.bind``) binds the module, ready to ``predict``
    (``for_training`` defaults to whether a ``loss`` was given; label shapes are inferred
    when not given).  Parameters with ``grad_req='null'`` become ``fixed_param_names``.
    ``context``: default the contexts of the block's parameters.  Un-initialised parameters
    raise ``ValueError`` naming them.  ``copy``: see docs/guide/convert.md (copy or share).
    """
    where = "to_module"
    mx = import_mxnet()
    if not isinstance(block, mx.gluon.HybridBlock):
        raise fail(where, "expected a gluon HybridBlock, got %s" % type(block).__name__, TypeError)
    if isinstance(data_names, str) or isinstance(label_names, str):
        raise fail(
            where, "data_names and label_names are lists of names, e.g. ('data',)", TypeError
        )
    # Every argument checked before anything is built: nothing half-done on a bad one.
    data_names = _check_names_list(data_names, "data_names", where)
    label_names = _check_names_list(label_names, "label_names", where)
    copy = check_flag(copy, "copy", where)
    if for_training is not None:
        for_training = check_flag(for_training, "for_training", where)
    contexts = _check_contexts(context, "context", where)
    if data_shapes is not None:
        data_shapes = _check_descs(data_shapes, "data_shapes", where)
    elif label_shapes is not None:
        raise fail(where, "label_shapes are for binding, which needs data_shapes too")
    if label_shapes is not None:
        label_shapes = _check_descs(label_shapes, "label_shapes", where)
    if data_names is None and data_shapes is not None:
        data_names = _shape_names(data_shapes)
    label_names = list(label_names or [])
    if loss is not None and not label_names:
        label_names = ["softmax_label"]
    block_inputs = None
    if data_names is not None:
        block_inputs = list(data_names) + (label_names if loss is None else [])
    elif label_names and loss is None:
        block_inputs = ["data"] + label_names
    names, out = _block_graph(block, block_inputs, where)
    if data_names is None:
        data_names = names[: len(names) - len(label_names)] if loss is None else names

    params = _block_params(block)
    graph_args = [n for n in out.list_arguments() if n not in names]
    graph_auxs = out.list_auxiliary_states()
    unknown = [n for n in graph_args + graph_auxs if n not in params]
    if unknown:
        raise fail(
            where,
            "the graph reads %s, which %s neither an input nor a parameter "
            "of the block" % (quoted(unknown), "is" if len(unknown) == 1 else "are"),
        )
    uninitialised = [n for n in graph_args + graph_auxs if params[n]._data is None]
    if uninitialised:
        raise fail(
            where,
            "parameter(s) %s of the block are not initialised; call "
            "initialize() and, for deferred shapes, run one forward pass "
            "first" % quoted(uninitialised),
        )

    if not facts.since(facts.GLUON_AUX_WRITES_ORDERED):
        # The last training step's BatchNorm statistics must land before anyone reads them.
        mx.nd.waitall()
    if loss is not None:
        out = _add_loss(out, loss, label_names[0], where)
        added = [
            n
            for n in out.list_arguments()
            if n not in names and n not in params and n not in label_names
        ]
        if added:
            raise fail(
                where,
                "the loss adds argument(s) %s the block has no values for; a "
                "loss head may only read the output and the label" % quoted(added),
            )
    if contexts is None:
        first = params[graph_args[0]] if graph_args else None
        contexts = first.list_ctx() if first is not None else [mx.cpu()]
    if data_shapes is not None:
        _check_bind_shapes(out, data_names, label_names, data_shapes, label_shapes, where)
    fixed = [n for n in graph_args if params[n].grad_req == "null"]
    mod = mx.mod.Module(
        out,
        data_names=data_names,
        label_names=label_names,
        context=contexts if len(contexts) > 1 else contexts[0],
        fixed_param_names=fixed or None,
    )
    if data_shapes is None:
        mod._arg_params = {n: _first(params[n], copy) for n in graph_args}
        mod._aux_params = {n: _first(params[n], copy) for n in graph_auxs}
        mod.params_initialized = True
        mod._params_dirty = False
        return mod
    return _bind(
        mod,
        out,
        params,
        graph_args,
        graph_auxs,
        data_shapes,
        label_shapes,
        contexts,
        copy,
        loss is not None if for_training is None else for_training,
        label_names if loss is not None else [],
        where,
    )


def _first(param, copy):
    array = param._data[0]
    return array.copy() if copy else array


def _bind(
    mod,
    out,
    params,
    graph_args,
    graph_auxs,
    data_shapes,
    label_shapes,
    contexts,
    copy,
    for_training,
    loss_labels,
    where,
):
    mx = import_mxnet()
    if loss_labels and label_shapes is None and for_training:
        # The loss op infers its label's shape from the data; bind needs it spelled out.
        shapes = {
            getattr(d, "name", None) or d[0]: tuple(getattr(d, "shape", None) or d[1])
            for d in data_shapes
        }
        arg_shapes, _, _ = out.infer_shape(**shapes)
        by_name = dict(zip(out.list_arguments(), arg_shapes))
        label_shapes = [(n, by_name[n]) for n in loss_labels]
    if not copy:
        for name in graph_args + graph_auxs:
            if params[name].list_ctx() != contexts:
                raise fail(
                    where,
                    "copy=False with data_shapes moves the block's parameters "
                    "into the module's executors, so the module must run on "
                    "the parameters' contexts (%s), not %s" % (params[name].list_ctx(), contexts),
                )
    # MXNet's bind zero-fills a CPU copy of every parameter unless the module already has
    # them, and then copies them twice (astype + copyto) per device; empty dicts skip all
    # that and the arrays are copied once, straight into the executors.
    mod._arg_params, mod._aux_params = {}, {}
    mod.params_initialized = True
    mod.bind(data_shapes=data_shapes, label_shapes=label_shapes, for_training=for_training)
    group = mod._exec_group
    arg_dicts = [e.arg_dict for e in group.execs]
    aux_dicts = [e.aux_dict for e in group.execs]
    args, auxs = {}, {}
    for names, dicts, store in ((graph_args, arg_dicts, args), (graph_auxs, aux_dicts, auxs)):
        for name in names:
            param = params[name]
            targets = [d[name] for d in dicts]
            by_ctx = dict(zip(param.list_ctx(), param._data))
            for ctx, target in zip(contexts, targets):  # executor i runs on contexts[i]
                by_ctx.get(ctx, param._data[0]).copyto(target)
            store[name] = targets
    if not copy:
        placement = _Placement()
        for name, targets in list(args.items()) + list(auxs.items()):
            param = params[name]
            placement.install(param, targets, contexts, _grads_fit(param, targets))
            _reset_trainer_kvstore(param)
        placement.finish()
    if len(contexts) == 1:
        mod._arg_params = {n: a[0] for n, a in args.items()}
        mod._aux_params = {n: a[0] for n, a in auxs.items()}
    else:
        cpu = mx.cpu()
        mod._arg_params = {n: a[0].copyto(cpu) for n, a in args.items()}
        mod._aux_params = {n: a[0].copyto(cpu) for n, a in auxs.items()}
    mod._params_dirty = False
    return mod
