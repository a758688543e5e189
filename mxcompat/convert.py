"""Module ⇄ Gluon in memory: ``Module.to_gluon()`` and ``HybridBlock.to_module()``.

MXNet 1.x can hand a model from one front end to the other only through files
(``export`` + ``Module.load``, ``save_checkpoint`` + ``SymbolBlock.imports``), and the
common shortcut (``mod.save_params`` then ``net2.load_params``) breaks on parameter prefixes
(``hybridsequential1_conv0_weight`` vs ``conv0_weight``).  mxcompat converts in memory::

    net2 = mod.to_gluon()                 # a SymbolBlock; loss heads -> inference ops
    mod.to_gluon(net2)                    # or load into a Gluon net you built, by structure
    mod = net.to_module(data_shapes=[("data", (32, 3, 32, 32))])   # bound, ready to predict

(``mxcompat.to_gluon(mod)`` / ``mxcompat.to_module(net)`` for those who prefer functions.)

Copy or share.  By default (``copy=True``) the result owns copies of the weights: training
either side never changes the other, like the file round trip.  ``copy=False`` copies
nothing: the result holds the very NDArrays of its source (a bound module's executor arrays,
an unbound module's ``arg_params``/``aux_params``, a block's parameter arrays), for
read-only uses such as quantization or serving.  Then every in-place write on either side —
``Trainer.step``, ``Module.update``, ``set_params``/``set_data``, BatchNorm's running
statistics in a training forward — is seen by the other; gradients and optimizer states are
never shared.  MXNet's ``bind`` always allocates fresh executor arrays, so a module made
unbound by ``to_module(copy=False)`` and bound later computes with its own copy (written back
into the shared arrays whenever it syncs its parameters: ``get_params``,
``save_checkpoint``); ``to_module(data_shapes=..., copy=False)`` binds and moves the block's
parameters into the executor arrays instead (values unchanged), so both keep sharing.
Anything that reallocates (``Parameter.reset_ctx``/``cast``, ``bind(force_rebind=True)``)
ends the sharing for the arrays it replaces.  A bound module shares through the executors it
was bound with: when ``forward``/``predict`` reshape it for another batch shape, MXNet's
reshaped executors alias the same memory under other engine variables, so writes made
through the shared arrays are not ordered before their reads and, in the MKLDNN builds
(1.7+), FullyConnected and BatchNorm weights they cached are not refreshed.  Train one side
while the other serves at its bound shape, or share read-only.

Gradient buffers of newly initialised Gluon parameters (``grad_req='write'``) get their
memory from MXNet at their first use (a model that only predicts never allocates them) and are
not zero-filled: backward overwrites them, and zeroing ~100 MB (ResNet-50) would cost as much
as copying the weights.  Call ``zero_grad()`` if you read gradients before the first
backward; ``grad_req='add'`` parameters get zeros as in Gluon.
"""
import contextlib
import json
import re
import threading

from . import _compat
from ._patching import Patch, Target, register
from .fixed_param_names import own_fixed_names

# Loss heads that need a label, and what they compute at inference (Module.predict).
_SOFTMAX_HEADS = ("SoftmaxOutput", "Softmax")   # "Softmax" is the pre-1.0 name, still in JSON
_SIGMOID_HEADS = ("LogisticRegressionOutput",)
_IDENTITY_HEADS = ("LinearRegressionOutput", "MAERegressionOutput", "SVMOutput")
_LOSS_HEADS = _SOFTMAX_HEADS + _SIGMOID_HEADS + _IDENTITY_HEADS

# to_module(loss=...): the head added so the module can fit.
_LOSSES = {"softmax": "SoftmaxOutput", "linear": "LinearRegressionOutput",
           "logistic": "LogisticRegressionOutput", "mae": "MAERegressionOutput",
           "svm": "SVMOutput"}


def _mx():
    import mxnet
    return mxnet


def _names(values):
    return ", ".join(repr(v) for v in values)


def _fail(where, message, error=ValueError):
    return error("mxcompat.%s: %s" % (where, message))


def _as_contexts(ctx):
    if ctx is None:
        return None
    return list(ctx) if isinstance(ctx, (list, tuple)) else [ctx]


# --- Gluon Parameter internals ------------------------------------------------------------

_DTYPE_ATTRIBUTE = []


def _set_dtype(param, dtype):
    # From 1.5 Parameter.dtype is a property whose setter casts the data; before, a plain
    # attribute.  Either way only the record is wanted here: the arrays already have it.
    if not _DTYPE_ATTRIBUTE:   # asked once: this runs for every parameter
        _DTYPE_ATTRIBUTE.append(
            "_dtype" if _compat.since(_compat.PARAMETER_DTYPE_PROPERTY) else "dtype")
    setattr(param, _DTYPE_ATTRIBUTE[0], dtype)


class _Placed(object):
    """The ``data`` of ``Parameter._init_impl(data, ctx_list)`` when the arrays are already
    where they belong: its ``copyto`` hands back the next of them instead of a copy.
    ``_init_impl`` (the same in 1.3.1 ... 1.9.1) copies ``data`` to each context of
    ``ctx_list`` in that list's order."""

    __slots__ = ("_arrays",)

    def __init__(self, arrays):
        self._arrays = iter(arrays)

    def copyto(self, ctx):
        return next(self._arrays)


def _install(param, arrays, contexts=None, grads=None, marks=None):
    """Make ``arrays`` (one per context) the data of ``param`` through Gluon's own
    ``_init_impl``, without copying.  Gradient buffers are reused when given, else allocated
    (see above); with ``marks`` (a list) their autograd marking is collected for one
    ``_mark`` call."""
    ctx_list = list(contexts) if contexts is not None else [a.context for a in arrays]
    first = arrays[0]
    shape, dtype = tuple(first.shape), first.dtype
    param._shape = shape
    _set_dtype(param, dtype)
    req = param.grad_req
    # Gluon's own gradients (zeros) where they are needed: 'add' accumulates into them, and a
    # sparse gradient needs its stype.  Else mxcompat's (reused, or allocated unfilled).
    own_grads = req != "null" and (grads is not None or (
        req == "write" and getattr(param, "_grad_stype", "default") == "default"))
    # _init_impl ends with _init_grad, which for grad_req 'null' only clears the gradients:
    # with mxcompat's own to come, the private field says 'null' for the call (the grad_req
    # property's setter would detach the data or allocate).
    if own_grads:
        param._grad_req = "null"
    try:
        param._init_impl(_Placed(arrays), ctx_list)
    finally:
        if own_grads:
            param._grad_req = req
    param._deferred_init = ()
    if not own_grads:
        return
    if grads is None:
        grads = [_unallocated(shape, c, dtype) for c in ctx_list]
    param._grad = list(grads)
    if marks is None:
        _mark([(param._data, param._grad, req)])
    else:
        marks.append((param._data, param._grad, req))


def _unallocated(shape, ctx, dtype):
    """An NDArray whose memory MXNet allocates at its first use (``delay_alloc``, as the
    executors' own arrays): a gradient buffer of a model that only predicts costs neither
    time nor memory.  ``_new_alloc_handle(shape, ctx, delay_alloc, dtype)`` is the same in
    1.3.1 ... 1.9.1."""
    mx = _mx()
    return mx.nd.NDArray(mx.nd.ndarray._new_alloc_handle(shape, ctx, True, dtype))


def _mark(marks):
    """One ``autograd.mark_variables`` call for every (arrays, grads, grad_req) collected."""
    if not marks:
        return
    mx = _mx()
    variables, gradients, reqs = [], [], []
    for arrays, grads, req in marks:
        variables.extend(arrays)
        gradients.extend(grads)
        reqs.extend([req] * len(arrays))
    mx.autograd.mark_variables(variables, gradients, reqs)


def _reset_trainer_kvstore(param):
    # Parameter.set_data does the same: a kvstore that updates holds its own copy.
    trainer = getattr(param, "_trainer", None)
    if trainer is not None and getattr(trainer, "_kv_initialized", False) \
            and getattr(trainer, "_update_on_kvstore", False):
        trainer._reset_kvstore()


def _grads_fit(param, arrays):
    grads = param._grad
    if not grads or len(grads) != len(arrays):
        return None
    for g, a in zip(grads, arrays):
        if g.shape != a.shape or g.context != a.context or g.dtype != a.dtype:
            return None
    return grads


# --- graphs -------------------------------------------------------------------------------

_iter_lock = threading.Lock()
_iter_state = {"users": 0, "saved": None}


@contextlib.contextmanager
def _symbols_iterate_by_index():
    """Symbol iteration by index, as from 1.5, while a SymbolBlock is built: 1.3/1.4 iterate
    by name, and SymbolBlock.__init__ walks every internal node so (ResNet-50: ~120 ms).

    Counted under a lock: with two threads converting at once, the first in installs the
    index iteration and the last out puts MXNet's own back (each saving and restoring its own
    view could leave the class with ours for good)."""
    if _compat.since(_compat.SYMBOL_ITER_BY_INDEX):
        yield
        return
    symbol_class = _mx().sym.Symbol
    with _iter_lock:
        if _iter_state["users"] == 0:
            _iter_state["saved"] = symbol_class.__dict__["__iter__"]
            # Same items as by name wherever names are unique (and right where they are
            # not), so a thread iterating meanwhile sees no difference.
            symbol_class.__iter__ = _iterate_by_index
        _iter_state["users"] += 1
    try:
        yield
    finally:
        with _iter_lock:
            _iter_state["users"] -= 1
            if _iter_state["users"] == 0:
                symbol_class.__iter__ = _iter_state.pop("saved")
                _iter_state["saved"] = None


def _iterate_by_index(self):
    return (self[i] for i in range(len(self.list_outputs())))


def _flat_symbols(out):
    mx = _mx()
    if isinstance(out, mx.sym.Symbol):
        return [out]
    flat = []
    for item in out:
        flat.extend(_flat_symbols(item))
    return flat


def _group(out):
    mx = _mx()
    flat = _flat_symbols(out)
    return flat[0] if len(flat) == 1 else mx.sym.Group(flat)


def _truthy(value):
    return str(value).strip().lower() in ("true", "1")


_SOFTMAX_OUTPUT_FLATTENS = []


def _softmax_output_flattens():
    """Whether ``SoftmaxOutput`` (no multi_output, no preserve_shape) normalises an N-d
    input over all its axes but the first (MXNet's CPU kernel), or over the last axis only
    (the MKLDNN kernel, used by the pip wheels from 1.7 unless MXNET_MKLDNN_ENABLED=0).
    Asked once of MXNet itself, on a 1x2x1x2 input: the build decides, not the version."""
    if not _SOFTMAX_OUTPUT_FLATTENS:
        mx = _mx()
        x = mx.nd.array([[[[0.0, 1.0]], [[2.0, 4.0]]]])
        first = mx.nd.SoftmaxOutput(x, mx.nd.zeros((1, 2, 1))).asnumpy()[0, 0, 0, 0]
        # flattened: e^0 / (e^0 + e^1 + e^2 + e^4) = 0.0152; last axis: 1 / (1 + e) = 0.269
        _SOFTMAX_OUTPUT_FLATTENS.append(bool(first < 0.1))
    return _SOFTMAX_OUTPUT_FLATTENS[0]


def _head_symbol(op, attrs, data, name):
    """What loss head ``op`` computes at inference, on symbol ``data``; ``name`` kept."""
    mx = _mx()
    if op in _IDENTITY_HEADS:
        # Their forward is the identity; a named copy keeps output names unique (1.3's
        # SymbolBlock looks its outputs up by name).
        return mx.sym.identity(data, name=name)
    if op in _SIGMOID_HEADS:
        return mx.sym.sigmoid(data, name=name)
    if _truthy(attrs.get("multi_output", False)):
        return mx.sym.softmax(data, axis=1, name=name)
    if _truthy(attrs.get("preserve_shape", False)) or not _softmax_output_flattens():
        return mx.sym.softmax(data, axis=-1, name=name)
    # SoftmaxOutput flattens all but the first axis, normalises, keeps the shape.
    flat = mx.sym.Reshape(data, shape=(0, -1), name=name + "_flat")
    return mx.sym.reshape_like(mx.sym.softmax(flat, axis=-1, name=name + "_softmax"), data,
                               name=name)


_HEAD_RE = re.compile(r'"op":\s*"(%s)",\s*"name":\s*"([^"\\]*)"(?:,\s*"attrs?":\s*(\{[^{}]*\}))?'
                      % "|".join(_LOSS_HEADS))


def _inference_symbol(symbol):
    """``symbol`` with every loss head replaced by what it computes at inference, so its
    outputs equal ``Module.predict``; ``symbol`` itself if it has no loss head.

    Loss heads are nearly always outputs: those are swapped through the Symbol API (a few
    nodes); parsing and reloading the whole graph is the fallback for any other place."""
    mx = _mx()
    text = symbol.tojson()
    heads = {}
    for match in _HEAD_RE.finditer(text):
        heads[match.group(2) + "_output"] = (match.group(1), match.group(2),
                                             json.loads(match.group(3) or "{}"))
    if not heads:
        return symbol
    outputs = symbol.list_outputs()
    if not all(name in outputs for name in heads):
        return _rewrite_graph(symbol, text)
    new, labels = [], set()
    for i, name in enumerate(outputs):
        out = symbol[i] if len(outputs) > 1 else symbol
        if name in heads:
            op, node, attrs = heads[name]
            children = out.get_children()
            labels.update(children.list_outputs()[1:])
            out = _head_symbol(op, attrs, children[0], node)
        new.append(out)
    result = new[0] if len(new) == 1 else mx.sym.Group(new)
    # A head also read inside the graph would still need its label: then rewrite it all.
    if labels.intersection(result.list_arguments()):
        return _rewrite_graph(symbol, text)
    return result


def _rewrite_graph(symbol, text):
    """``_inference_symbol`` for any graph: rewrite the JSON (loss heads anywhere)."""
    mx = _mx()
    graph = json.loads(text)
    nodes = graph["nodes"]
    if not any(node["op"] in _LOSS_HEADS for node in nodes):
        return symbol
    out_nodes = []
    target = {}   # old node index -> new node index, or a new entry (identity heads)

    def entry(old):
        new = target[old[0]]
        if isinstance(new, list):
            return list(new)
        return [new, old[1], old[2] if len(old) > 2 else 0]

    def emit(node):
        out_nodes.append(node)
        return len(out_nodes) - 1

    for i, node in enumerate(nodes):
        op = node["op"]
        if op not in _LOSS_HEADS:
            node = dict(node)
            node["inputs"] = [entry(e) for e in node["inputs"]]
            target[i] = emit(node)
            continue
        data = entry(node["inputs"][0])
        attrs = node.get("attrs") or node.get("attr") or node.get("param") or {}
        name = node["name"]
        if op in _IDENTITY_HEADS:
            target[i] = emit({"op": "_copy", "name": name, "inputs": [data]})
        elif op in _SIGMOID_HEADS:
            target[i] = emit({"op": "sigmoid", "name": name, "inputs": [data]})
        elif _truthy(attrs.get("multi_output", False)):
            target[i] = emit({"op": "softmax", "name": name, "attrs": {"axis": "1"},
                              "inputs": [data]})
        elif _truthy(attrs.get("preserve_shape", False)) or not _softmax_output_flattens():
            target[i] = emit({"op": "softmax", "name": name, "attrs": {"axis": "-1"},
                              "inputs": [data]})
        else:
            # SoftmaxOutput flattens all but the first axis, normalises, keeps the shape.
            flat = emit({"op": "Reshape", "name": name + "_flat",
                         "attrs": {"shape": "(0, -1)"}, "inputs": [data]})
            soft = emit({"op": "softmax", "name": name + "_softmax", "attrs": {"axis": "-1"},
                         "inputs": [[flat, 0, 0]]})
            target[i] = emit({"op": "reshape_like", "name": name,
                              "inputs": [[soft, 0, 0], data]})
    heads = [entry(h) for h in graph["heads"]]

    # Keep what the heads reach (the label variables of the old heads go), renumbered.
    keep = [False] * len(out_nodes)
    for head in heads:
        keep[head[0]] = True
    for i in range(len(out_nodes) - 1, -1, -1):
        if keep[i]:
            for e in out_nodes[i]["inputs"]:
                keep[e[0]] = True
    index = {}
    kept = []
    for i, node in enumerate(out_nodes):
        if keep[i]:
            node["inputs"] = [[index[e[0]]] + list(e[1:]) for e in node["inputs"]]
            index[i] = len(kept)
            kept.append(node)
    new_graph = {"nodes": kept,
                 "arg_nodes": [index[i] for i, n in enumerate(out_nodes)
                               if keep[i] and n["op"] == "null"],
                 "heads": [[index[h[0]]] + list(h[1:]) for h in heads]}
    if "attrs" in graph:
        new_graph["attrs"] = graph["attrs"]
    return mx.sym.load_json(json.dumps(new_graph))


def _consumers(symbol):
    """{variable name: (op, input slot)} of the first operator reading each variable."""
    nodes = json.loads(symbol.tojson())["nodes"]
    found = {}
    for node in nodes:
        if node["op"] == "null":
            continue
        for slot, e in enumerate(node["inputs"]):
            source = nodes[e[0]]
            if source["op"] == "null" and source["name"] not in found:
                found[source["name"]] = (node["op"], slot)
    return found


def _block_graph(block, input_names, where):
    """(input names, output symbol) of ``block``: its cached graph if it has one, else the
    graph of calling it on symbol variables named ``input_names``."""
    mx = _mx()
    cached = getattr(block, "_cached_graph", ())
    if cached:
        inputs, out = cached
        names = [s.name for s in inputs]
        if input_names is None or list(input_names) == names:
            return names, out
        if len(input_names) != len(names):
            raise _fail(where, "the block's graph takes %d input(s) (%s), but %d name(s) were "
                               "given (%s)" % (len(names), _names(names), len(input_names),
                                               _names(input_names)))
        renamed = out(**{old: mx.sym.var(new) for old, new in zip(names, input_names)})
        return list(input_names), renamed
    names = list(input_names) if input_names is not None else ["data"]
    try:
        out = block(*[mx.sym.var(n) for n in names])
    except Exception as err:  # pylint: disable=broad-except
        raise _fail(where, "could not build the graph of %s by calling it on %d symbol "
                           "input(s) (%s): %s: %s.  Pass one name per input of the block "
                           "(data_names, label_names), or hybridize it and run one forward "
                           "pass first." % (type(block).__name__, len(names), _names(names),
                                            type(err).__name__, err)) from None
    return names, _group(out)


def _block_params(block):
    """{name: Parameter} the block computes with."""
    if getattr(block, "_cached_op", None) is not None:
        # The cached op's own list: what the graph uses (incl. backend-added ones), and no
        # walk over the children.
        args = getattr(block, "_cached_op_args", None)
        if args:
            return {p.name: p for is_arg, p in args if not is_arg}
    return dict(block.collect_params().items())


# --- Module -> Gluon ----------------------------------------------------------------------

def _module_arrays(module, where):
    """The module's current values: ``({name: [array per device]}, {name: [...]},
    contexts of those arrays or None if unknown)``."""
    if not module.params_initialized:
        raise _fail(where, "the module has no parameters yet: call init_params() or "
                           "set_params(), or load one with Module.load()")
    if module.binded:
        group = module._exec_group
        arg_dicts = [e.arg_dict for e in group.execs]
        aux_dicts = [e.aux_dict for e in group.execs]
        args = {n: [d[n] for d in arg_dicts] for n in group.param_names}
        auxs = {n: [d[n] for d in aux_dicts] for n in group.aux_names}
        return args, auxs, list(module._context)
    return ({n: [a] for n, a in (module._arg_params or {}).items()},
            {n: [a] for n, a in (module._aux_params or {}).items()}, None)


def _module_inputs(module):
    return list(module.data_names) + list(getattr(module, "_state_names", None) or [])


def _module_inference_symbol(module, inputs, args):
    symbol = module.symbol
    labels = set(module.label_names or ())
    # A loss head always reads a label variable: no such argument, nothing to replace.
    for name in symbol.list_arguments():
        if name not in inputs and (name not in args or name in labels
                                   or name.endswith("label")):
            return _inference_symbol(symbol)
    return symbol


class _Values(object):
    """The arrays a converted parameter gets: the source's own, or copies."""

    def __init__(self, copy, source_contexts, contexts):
        self.copy = copy
        self.source_contexts = source_contexts   # None: unknown (ask each array)
        self.contexts = contexts                 # where copies go; None: where each source is

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


def to_gluon(module, block=None, copy=True, ctx=None):
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
    ``copy``: see the module docstring.  ``ctx``: the contexts of the result (default: the
    module's; with ``copy=False`` the arrays stay where they are).
    """
    where = "to_gluon"
    mx = _mx()
    if not isinstance(module, mx.mod.Module):
        raise _fail(where, "expected an mxnet Module, got %s" % type(module).__name__, TypeError)
    contexts = _as_contexts(ctx)
    args, auxs, source_contexts = _module_arrays(module, where)
    if not copy and contexts is not None:
        have = {a.context for arrays in args.values() for a in arrays}
        if have != set(contexts):
            raise _fail(where, "copy=False shares the module's arrays where they are (%s); "
                               "ctx=%s would need copies" % (sorted(map(str, have)), contexts))
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
    mx = _mx()
    inputs = _module_inputs(module)
    symbol = _module_inference_symbol(module, inputs, args)
    arg_names = [n for n in symbol.list_arguments() if n not in inputs]
    aux_names = symbol.list_auxiliary_states()
    missing = [n for n in arg_names if n not in args] + [n for n in aux_names if n not in auxs]
    if missing:
        raise _fail(where, "the module's symbol needs %s, which %s neither data nor "
                           "parameters of the module (labels of a loss mxcompat cannot replace "
                           "at inference, or parameters the module lacks)"
                    % (_names(missing), "is" if len(missing) == 1 else "are"))
    dtypes = {}
    if module.binded:
        dtypes = {d.name: d.dtype for d in module._data_shapes}
    default = args[arg_names[0]][0].dtype if arg_names else "float32"
    # Typed inputs: SymbolBlock infers its parameters' dtypes from them, without a warning.
    input_vars = [mx.sym.var(n, dtype=dtypes.get(n, default)) for n in inputs]
    # Copies first: MXNet's engine makes them on its own threads while the block is built.
    placed = [(name, values.get(source[name]))
              for names, source in ((arg_names, args), (aux_names, auxs)) for name in names]
    with _symbols_iterate_by_index():
        net = mx.gluon.SymbolBlock(symbol, input_vars)
    # Its own ParameterDict holds them all (collect_params would walk the block's attributes).
    params = net.params
    # The module's own fixed names: the registry's are not the Gluon net's grad_req.
    fixed = set(own_fixed_names(module) or ())
    marks = []
    for name, (arrays, contexts) in placed:
        param = params[name]
        if name in fixed:
            param.grad_req = "null"
        _install(param, arrays, contexts, marks=marks)
    _mark(marks)
    return net


def _load_into(block, module, args, auxs, values, where):
    mx = _mx()
    if not isinstance(block, mx.gluon.HybridBlock):
        raise _fail(where, "block must be a gluon HybridBlock (its graph gives the order of "
                           "its parameters), got %s" % type(block).__name__, TypeError)
    inputs = _module_inputs(module)
    symbol = _module_inference_symbol(module, inputs, args)
    mod_args = [n for n in symbol.list_arguments() if n in args and n not in inputs]
    mod_auxs = [n for n in symbol.list_auxiliary_states() if n in auxs]
    call_names = ["data"] if len(inputs) == 1 else ["data%d" % i for i in range(len(inputs))]
    names, out = _block_graph(block, None if getattr(block, "_cached_graph", ()) else call_names,
                              where)
    net_args = [n for n in out.list_arguments() if n not in names]
    net_auxs = out.list_auxiliary_states()
    params = _block_params(block)
    mod_use, net_use = _consumers(symbol), _consumers(out)

    problems = []
    pairs = []
    for kind, mine, theirs, arrays in (("argument", mod_args, net_args, args),
                                       ("auxiliary", mod_auxs, net_auxs, auxs)):
        if len(mine) != len(theirs):
            problems.append("%d %s parameters in the module, %d in the block"
                            % (len(mine), kind, len(theirs)))
        for i in range(max(len(mine), len(theirs))):
            if i >= len(mine):
                problems.append("block %r (%s) has no counterpart in the module"
                                % (theirs[i], _describe(params.get(theirs[i]), net_use,
                                                        theirs[i])))
            elif i >= len(theirs):
                problems.append("module %r (%s) has no counterpart in the block"
                                % (mine[i], _describe(arrays[mine[i]][0], mod_use, mine[i])))
            elif theirs[i] not in params:
                problems.append("block input %r is not a parameter of the block" % theirs[i])
            elif not _fits(params[theirs[i]], arrays[mine[i]][0], mod_use.get(mine[i]),
                           net_use.get(theirs[i])):
                problems.append("module %r (%s) vs block %r (%s)"
                                % (mine[i], _describe(arrays[mine[i]][0], mod_use, mine[i]),
                                   theirs[i], _describe(params[theirs[i]], net_use,
                                                        theirs[i])))
            else:
                pairs.append((params[theirs[i]], arrays[mine[i]]))
    if problems:
        raise _fail(where, "the module does not match the block (nothing was loaded):\n  "
                    + "\n  ".join(problems))

    marks = []
    for param, arrays in pairs:
        if values.copy and param._data is not None:
            param.set_data(arrays[0])      # in place, on the block's own contexts
        elif values.copy:
            targets = values.contexts
            if param._deferred_init:       # initialize(ctx=...) said where
                targets = list(param._deferred_init[1])
            new, contexts = _Values(True, values.source_contexts, targets).get(arrays)
            _install(param, new, contexts, marks=marks)
        else:
            grads = _grads_fit(param, arrays) if param._data is not None else None
            _install(param, arrays, values.source_contexts, grads, marks=marks)
            _reset_trainer_kvstore(param)
    _mark(marks)
    return block


def _describe(value, uses, name):
    """'Convolution input 1, shape (8, 3, 3, 3), float32' for a Parameter or an NDArray."""
    import numpy as np
    if value is None:
        return "not a parameter"
    op = uses.get(name)
    dtype = np.dtype(value.dtype).name if value.dtype is not None else "?"
    return "%s, shape %s, %s" % ("%s input %d" % op if op else "unused",
                                 tuple(value.shape) if value.shape is not None else "?", dtype)


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


# --- Gluon -> Module ----------------------------------------------------------------------

def _shape_names(shapes):
    return [getattr(d, "name", None) or d[0] for d in shapes]


def to_module(block, data_names=None, label_names=None, data_shapes=None, label_shapes=None,
              context=None, copy=True, loss=None, for_training=None):
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
    raise ``ValueError`` naming them.  ``copy``: see the module docstring.
    """
    where = "to_module"
    mx = _mx()
    if not isinstance(block, mx.gluon.HybridBlock):
        raise _fail(where, "expected a gluon HybridBlock, got %s" % type(block).__name__,
                    TypeError)
    if isinstance(data_names, str) or isinstance(label_names, str):
        raise _fail(where, "data_names and label_names are lists of names, e.g. ('data',)",
                    TypeError)
    if data_names is None and data_shapes is not None:
        data_names = _shape_names(data_shapes)
    data_names = list(data_names) if data_names is not None else None
    label_names = list(label_names or [])
    if loss is not None and not label_names:
        label_names = ["softmax_label"]
    block_inputs = None
    if data_names is not None:
        block_inputs = data_names + (label_names if loss is None else [])
    elif label_names and loss is None:
        block_inputs = ["data"] + label_names
    names, out = _block_graph(block, block_inputs, where)
    if data_names is None:
        data_names = names[:len(names) - len(label_names)] if loss is None else names

    params = _block_params(block)
    graph_args = [n for n in out.list_arguments() if n not in names]
    graph_auxs = out.list_auxiliary_states()
    unknown = [n for n in graph_args + graph_auxs if n not in params]
    if unknown:
        raise _fail(where, "the graph reads %s, which %s neither an input nor a parameter "
                           "of the block" % (_names(unknown),
                                             "is" if len(unknown) == 1 else "are"))
    uninitialised = [n for n in graph_args + graph_auxs if params[n]._data is None]
    if uninitialised:
        raise _fail(where, "parameter(s) %s of the block are not initialised; call "
                           "initialize() and, for deferred shapes, run one forward pass "
                           "first" % _names(uninitialised))

    if not _compat.since(_compat.GLUON_AUX_WRITES_ORDERED):
        # The last training step's BatchNorm statistics must land before anyone reads them.
        mx.nd.waitall()
    if loss is not None:
        out = _add_loss(out, loss, label_names[0], where)
        added = [n for n in out.list_arguments()
                 if n not in names and n not in params and n not in label_names]
        if added:
            raise _fail(where, "the loss adds argument(s) %s the block has no values for; a "
                               "loss head may only read the output and the label"
                        % _names(added))
    if context is None:
        first = params[graph_args[0]] if graph_args else None
        context = first.list_ctx() if first is not None else [mx.cpu()]
    contexts = _as_contexts(context)
    fixed = [n for n in graph_args if params[n].grad_req == "null"]
    mod = mx.mod.Module(out, data_names=data_names, label_names=label_names,
                        context=contexts if len(contexts) > 1 else contexts[0],
                        fixed_param_names=fixed or None)
    if data_shapes is None:
        mod._arg_params = {n: _first(params[n], copy) for n in graph_args}
        mod._aux_params = {n: _first(params[n], copy) for n in graph_auxs}
        mod.params_initialized = True
        mod._params_dirty = False
        return mod
    return _bind(mod, out, params, graph_args, graph_auxs, data_shapes, label_shapes,
                 contexts, copy, loss is not None if for_training is None else for_training,
                 label_names if loss is not None else [], where)


def _first(param, copy):
    array = param._data[0]
    return array.copy() if copy else array


def _add_loss(out, loss, label_name, where):
    mx = _mx()
    label = mx.sym.var(label_name)
    if callable(loss):
        return loss(out, label)
    if loss not in _LOSSES:
        raise _fail(where, "loss=%r: expected one of %s or a callable (output, label) -> "
                           "symbol" % (loss, _names(sorted(_LOSSES))))
    if len(out.list_outputs()) != 1:
        raise _fail(where, "loss=%r needs a block with one output, this one has %d"
                    % (loss, len(out.list_outputs())))
    head = getattr(mx.sym, _LOSSES[loss])
    return head(out, label=label, name="softmax" if loss == "softmax" else loss + "_output")


def _bind(mod, out, params, graph_args, graph_auxs, data_shapes, label_shapes, contexts, copy,
          for_training, loss_labels, where):
    mx = _mx()
    if loss_labels and label_shapes is None and for_training:
        # The loss op infers its label's shape from the data; bind needs it spelled out.
        shapes = {getattr(d, "name", None) or d[0]: tuple(getattr(d, "shape", None) or d[1])
                  for d in data_shapes}
        arg_shapes, _, _ = out.infer_shape(**shapes)
        by_name = dict(zip(out.list_arguments(), arg_shapes))
        label_shapes = [(n, by_name[n]) for n in loss_labels]
    if not copy:
        for name in graph_args + graph_auxs:
            if params[name].list_ctx() != contexts:
                raise _fail(where, "copy=False with data_shapes moves the block's parameters "
                                   "into the module's executors, so the module must run on "
                                   "the parameters' contexts (%s), not %s"
                            % (params[name].list_ctx(), contexts))
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
            for ctx, target in zip(contexts, targets):     # executor i runs on contexts[i]
                by_ctx.get(ctx, param._data[0]).copyto(target)
            store[name] = targets
    if not copy:
        marks = []
        for name, targets in list(args.items()) + list(auxs.items()):
            param = params[name]
            _install(param, targets, contexts, _grads_fit(param, targets), marks)
            _reset_trainer_kvstore(param)
        _mark(marks)
    if len(contexts) == 1:
        mod._arg_params = {n: a[0] for n, a in args.items()}
        mod._aux_params = {n: a[0] for n, a in auxs.items()}
    else:
        cpu = mx.cpu()
        mod._arg_params = {n: a[0].copyto(cpu) for n, a in args.items()}
        mod._aux_params = {n: a[0].copyto(cpu) for n, a in auxs.items()}
    mod._params_dirty = False
    return mod


PATCH = register(Patch(
    "convert",
    "Module.to_gluon() and HybridBlock.to_module(): in-memory conversion between the APIs.",
    targets=[
        Target("mxnet.module.module", "Module.to_gluon", new=to_gluon),
        Target("mxnet.gluon.block", "HybridBlock.to_module", new=to_module),
    ],
))
