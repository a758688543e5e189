"""A model of any kind the conversions take (a Module, a HybridBlock, a ``(symbol, arg_params,
aux_params)`` triple) as its inference graph and the arrays it holds: what ``quantize`` and
``to_onnx`` hand to MXNet's own functions, which take the triple."""

from .._core import facts
from .._core.conversion import fail, import_mxnet, quoted
from .graph import (
    _block_graph,
    _block_params,
    _inference_symbol,
    _module_inference_symbol,
    _module_inputs,
)


def module_arrays(module, where):
    """The module's current values: ``({name: [array per device]}, {name: [...]},
    contexts of those arrays or None if unknown)``."""
    if not module.params_initialized:
        raise fail(
            where,
            "the module has no parameters yet: call init_params() or "
            "set_params(), or load one with Module.load()",
        )
    if module.binded:
        group = module._exec_group
        arg_dicts = [e.arg_dict for e in group.execs]
        aux_dicts = [e.aux_dict for e in group.execs]
        args = {n: [d[n] for d in arg_dicts] for n in group.param_names}
        auxs = {n: [d[n] for d in aux_dicts] for n in group.aux_names}
        return args, auxs, list(module._context)
    return (
        {n: [a] for n, a in (module._arg_params or {}).items()},
        {n: [a] for n, a in (module._aux_params or {}).items()},
        None,
    )


def model_graph(model, where, data_names=None, inference=True):
    """``model`` as ``(symbol, arg_params, aux_params, inputs)``: its graph with every loss
    head replaced by its inference op (as ``to_gluon`` does), the arrays the model holds now
    for that graph's arguments and auxiliary states (not copied: a bound Module's first
    device's, a block's own), and the graph's inputs in order.  ``data_names`` name a block's
    or a triple's inputs (default: a block's own, else ``data``; a triple's arguments that
    have no value).  ``inference=False`` keeps the loss heads (to_torch's training graph).
    Errors name ``where``, the caller."""
    mx = import_mxnet()
    if isinstance(model, mx.mod.Module):
        args, auxs, _ = module_arrays(model, where)
        inputs = _module_inputs(model)
        symbol = _module_inference_symbol(model, inputs, args) if inference else model.symbol
        values = {n: a[0] for n, a in list(args.items()) + list(auxs.items())}
    elif isinstance(model, mx.gluon.HybridBlock):
        inputs, out = _block_graph(model, data_names, where)
        symbol = _inference_symbol(out) if inference else out
        params = _block_params(model)
        used = [n for n in _parts(symbol) if n not in inputs]
        unset = [n for n in used if n not in params or params[n]._data is None]
        if unset:
            raise fail(
                where,
                "parameter(s) %s of the block are not initialised; call "
                "initialize() and run one forward pass first" % quoted(unset),
            )
        if not facts.since(facts.GLUON_AUX_WRITES_ORDERED):
            mx.nd.waitall()  # the last training step's BatchNorm statistics must land first
        values = {n: params[n]._data[0] for n in used}
    elif isinstance(model, (tuple, list)):
        symbol, values = _triple(mx, model, where, inference)
        inputs = list(data_names or [n for n in symbol.list_inputs() if n not in values])
    else:
        raise fail(
            where,
            "expected a Module, a HybridBlock or a (symbol, arg_params, aux_params) "
            "triple, got %s" % type(model).__name__,
            TypeError,
        )
    arg_params = {n: values[n] for n in symbol.list_arguments() if n in values}
    aux_params = {n: values[n] for n in symbol.list_auxiliary_states() if n in values}
    return symbol, arg_params, aux_params, inputs


def _parts(symbol):
    return symbol.list_arguments() + symbol.list_auxiliary_states()


def _triple(mx, triple, where, inference):
    if (
        len(triple) != 3
        or not isinstance(triple[0], mx.sym.Symbol)
        or not all(p is None or isinstance(p, dict) for p in triple[1:])
    ):
        raise fail(
            where,
            "a (symbol, arg_params, aux_params) triple was expected (a "
            "Symbol and two dicts of NDArrays)",
            TypeError,
        )
    symbol = _inference_symbol(triple[0]) if inference else triple[0]
    values = dict(triple[1] or {})
    values.update(triple[2] or {})
    return symbol, values
