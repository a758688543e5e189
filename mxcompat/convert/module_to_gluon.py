"""Module -> Gluon: ``Module.to_gluon()`` builds a ``SymbolBlock`` over the module's
inference graph, or loads the module's values into a ``HybridBlock`` of the same
architecture by structure; either holding copies of the values, or the module's own arrays.
"""

from __future__ import annotations

from .._core.conversion import check_flag, fail, import_mxnet, quoted
from ..freeze.fixed_param_names import own_fixed_names
from ._common import _check_contexts
from .graph import (
    _block_graph,
    _block_params,
    _consumers,
    _module_inference_graph,
    _module_inputs,
)
from .model import module_arrays
from .params import _grads_fit, _Placement, _reset_trainer_kvstore
from .symbol_block import _param_dtypes_given, _storage_walk_skipped

# Names for annotations only: type checkers take this block as run, Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from mxnet.context import Context
    from mxnet.gluon import HybridBlock
    from mxnet.module import Module


class _Values:
    """The arrays a converted parameter gets: the source's own, or copies."""

    def __init__(self, copy, source_contexts, contexts):
        self.copy = copy
        self.source_contexts = source_contexts  # None: unknown (ask each array)
        self.contexts = contexts  # where copies go; None: where each source is

    def get(self, arrays):
        """(arrays, their contexts or None)."""
        if not self.copy:
            return arrays, self.source_contexts
        if self.contexts is None:
            return [a.copy() for a in arrays], self.source_contexts
        if len(arrays) == 1:
            return [arrays[0].copyto(c) for c in self.contexts], self.contexts
        by_ctx = {a.context: a for a in arrays}
        return [by_ctx.get(c, arrays[0]).copyto(c) for c in self.contexts], self.contexts


def _share_module_arrays(module, args, auxs):
    """Once a bound module shares its executor arrays, its ``get_params`` must see writes
    made through the other side: with one device its arg/aux params become those arrays."""
    if not module.binded:
        return
    if len(module._context) == 1:
        module._arg_params = {n: a[0] for n, a in args.items()}
        module._aux_params = {n: a[0] for n, a in auxs.items()}
        module._params_dirty = False
    else:
        module._params_dirty = True


def to_gluon(
    module: Module,
    block: HybridBlock | None = None,
    copy: bool = True,
    ctx: Context | list[Context] | tuple[Context, ...] | None = None,
) -> HybridBlock:
    """A Gluon model of ``module``'s network holding its current parameters.

    Without ``block``: a ``gluon.SymbolBlock`` over the module's symbol, inputs its data
    names (then state names), holding arg *and* aux parameters (BatchNorm statistics).  Loss
    heads are replaced by what they compute at inference (``SoftmaxOutput`` -> ``softmax``,
    ``LogisticRegressionOutput`` -> ``sigmoid``, ``LinearRegressionOutput``,
    ``MAERegressionOutput`` and ``SVMOutput`` -> their input), so its outputs equal
    ``Module.predict``.  The module's ``fixed_param_names`` get ``grad_req='null'``.

    With ``block`` (a ``HybridBlock`` of the same architecture, whatever its prefixes): the
    parameters are loaded into it by structure (the order in which the two graphs use them,
    checked pairwise by operator and shape) and ``block`` is returned.  Any mismatch raises
    ``ValueError`` listing it, before anything is loaded.

    Works on a bound module and on one that only has parameters (``Module.load``).
    ``copy``: see docs/guide/convert.md (copy or share).  ``ctx``: the contexts of the result
    (default: the module's; with ``copy=False`` the arrays stay where they are).
    """
    where = "to_gluon"
    mx = import_mxnet()
    if not isinstance(module, mx.mod.Module):
        raise fail(where, "expected an mxnet Module, got %s" % type(module).__name__, TypeError)
    copy = check_flag(copy, "copy", where)
    contexts = _check_contexts(ctx, "ctx", where)
    if block is not None and not isinstance(block, mx.gluon.HybridBlock):
        raise fail(
            where,
            "block must be a gluon HybridBlock (its graph gives the order of "
            "its parameters), got %s" % type(block).__name__,
            TypeError,
        )
    args, auxs, source_contexts = module_arrays(module, where)
    if not copy and contexts is not None:
        have = {a.context for arrays in args.values() for a in arrays}
        if have != set(contexts):
            raise fail(
                where,
                "copy=False shares the module's arrays where they are (%s); "
                "ctx=%s would need copies" % (sorted(map(str, have)), contexts),
            )
    if copy and contexts is None and source_contexts is None:
        contexts = list(module._context)
    values = _Values(copy, source_contexts, contexts if copy else None)
    if block is None:
        result = _symbol_block(module, args, auxs, values, where)
    else:
        result = _load_into(block, module, args, auxs, values, where)
    if not copy:
        _share_module_arrays(module, args, auxs)
    return result


def _symbol_block(module, args, auxs, values, where):
    mx = import_mxnet()
    inputs = _module_inputs(module)
    symbol, arg_names = _module_inference_graph(module, inputs, args)
    dtypes = {}
    if module.binded:
        dtypes = {d.name: d.dtype for d in module._data_shapes}
    first = next((n for n in arg_names if n in args), None)
    default = args[first][0].dtype if first is not None else "float32"
    # Typed inputs, the graph inputs the block keeps (a SymbolBlock built elsewhere infers
    # its parameters' dtypes from them, without a warning).
    input_vars = [mx.sym.var(n, dtype=dtypes.get(n, default)) for n in inputs]
    if values.copy:
        # Copies first: MXNet's engine makes them on its own threads while the block is
        # built.  Shared arrays need no names beforehand: the block's parameters give them.
        aux_names = symbol.list_auxiliary_states()
        _check_present(arg_names, aux_names, args, auxs, where)
        placed = {
            name: values.get(source[name])
            for names, source in ((arg_names, args), (aux_names, auxs))
            for name in names
        }
    # Every parameter gets its array's dtype below: SymbolBlock's own inference is not needed.
    with _storage_walk_skipped(symbol, where), _param_dtypes_given():
        net = mx.gluon.SymbolBlock(symbol, input_vars)
    # Its own ParameterDict holds them all (collect_params would walk the block's attributes),
    # arguments (not inputs) then auxiliary states.
    params = net.params
    if values.copy:
        items = [(param, *placed[name], None) for name, param in params.items()]
    else:
        # A name is an argument or an auxiliary state of the symbol, never both.
        contexts, items, missing = values.source_contexts, [], []
        for name, param in params.items():
            arrays = args.get(name) or auxs.get(name)
            if arrays is None:
                missing.append(name)
            items.append((param, arrays, contexts, None))
        if missing:
            _check_present(missing, (), args, auxs, where)
    # The module's own fixed names: the registry's are not the Gluon net's grad_req.
    for name in set(own_fixed_names(module) or ()).intersection(params.keys()):
        params[name].grad_req = "null"
    placement = _Placement()
    placement.install_all(items)
    placement.finish()
    return net


def _check_present(arg_names, aux_names, args, auxs, where):
    missing = [n for n in arg_names if n not in args] + [n for n in aux_names if n not in auxs]
    if missing:
        raise fail(
            where,
            "the module's symbol needs %s, which %s neither data nor "
            "parameters of the module (labels of a loss mxcompat cannot replace "
            "at inference, or parameters the module lacks)"
            % (quoted(missing), "is" if len(missing) == 1 else "are"),
        )


def _load_into(block, module, args, auxs, values, where):
    mx = import_mxnet()
    if not isinstance(block, mx.gluon.HybridBlock):
        raise fail(
            where,
            "block must be a gluon HybridBlock (its graph gives the order of "
            "its parameters), got %s" % type(block).__name__,
            TypeError,
        )
    inputs = _module_inputs(module)
    symbol, arg_names = _module_inference_graph(module, inputs, args)
    mod_args = [n for n in arg_names if n in args]
    mod_auxs = [n for n in symbol.list_auxiliary_states() if n in auxs]
    call_names = ["data"] if len(inputs) == 1 else ["data%d" % i for i in range(len(inputs))]
    names, out = _block_graph(
        block, None if getattr(block, "_cached_graph", ()) else call_names, where
    )
    net_args = [n for n in out.list_arguments() if n not in names]
    net_auxs = out.list_auxiliary_states()
    params = _block_params(block)
    mod_use, net_use = _consumers(symbol), _consumers(out)

    problems = []
    pairs = []
    for kind, mine, theirs, arrays in (
        ("argument", mod_args, net_args, args),
        ("auxiliary", mod_auxs, net_auxs, auxs),
    ):
        if len(mine) != len(theirs):
            problems.append(
                "%d %s parameters in the module, %d in the block" % (len(mine), kind, len(theirs))
            )
        for i in range(max(len(mine), len(theirs))):
            if i >= len(mine):
                problems.append(
                    "block %r (%s) has no counterpart in the module"
                    % (theirs[i], _describe(params.get(theirs[i]), net_use, theirs[i]))
                )
            elif i >= len(theirs):
                problems.append(
                    "module %r (%s) has no counterpart in the block"
                    % (mine[i], _describe(arrays[mine[i]][0], mod_use, mine[i]))
                )
            elif theirs[i] not in params:
                problems.append("block input %r is not a parameter of the block" % theirs[i])
            elif not _fits(
                params[theirs[i]], arrays[mine[i]][0], mod_use.get(mine[i]), net_use.get(theirs[i])
            ):
                problems.append(
                    "module %r (%s) vs block %r (%s)"
                    % (
                        mine[i],
                        _describe(arrays[mine[i]][0], mod_use, mine[i]),
                        theirs[i],
                        _describe(params[theirs[i]], net_use, theirs[i]),
                    )
                )
            else:
                pairs.append((params[theirs[i]], arrays[mine[i]]))
    if problems:
        raise fail(
            where,
            "the module does not match the block (nothing was loaded):\n  " + "\n  ".join(problems),
        )

    placement = _Placement()
    for param, arrays in pairs:
        if values.copy and param._data is not None:
            param.set_data(arrays[0])  # in place, on the block's own contexts
        elif values.copy:
            targets = values.contexts
            if param._deferred_init:  # initialize(ctx=...) said where
                targets = list(param._deferred_init[1])
            new, contexts = _Values(True, values.source_contexts, targets).get(arrays)
            placement.install(param, new, contexts)
        else:
            grads = _grads_fit(param, arrays) if param._data is not None else None
            placement.install(param, arrays, values.source_contexts, grads)
            _reset_trainer_kvstore(param)
    placement.finish()
    return block


def _describe(value, uses, name):
    """'Convolution input 1, shape (8, 3, 3, 3), float32' for a Parameter or an NDArray."""
    import numpy as np

    if value is None:
        return "not a parameter"
    op = uses.get(name)
    dtype = np.dtype(value.dtype).name if value.dtype is not None else "?"
    return "%s, shape %s, %s" % (
        "%s input %d" % op if op else "unused",
        tuple(value.shape) if value.shape is not None else "?",
        dtype,
    )


def _fits(param, array, mine, theirs):
    import numpy as np

    if mine != theirs:
        return False
    shape = param.shape
    if shape is not None:
        if len(shape) != len(array.shape):
            return False
        if any(s not in (0, -1, a) for s, a in zip(shape, array.shape)):
            return False
    return param.dtype is None or np.dtype(param.dtype) == np.dtype(array.dtype)
