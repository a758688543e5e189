"""MXNet models to ONNX on today's onnx and onnxruntime: MXNet's own exporter, working and
verified.

MXNet ships an exporter in every supported release (``mx.contrib.onnx.export_model`` from
1.3, ``mx.onnx.export_model`` in 1.9), written against the onnx of its day.  Today's onnx
breaks it three ways: ``onnx.mapping`` is gone (onnx 1.19+; "Onnx and protobuf need to be
installed"), the exporter stamps the newest opset of the installed onnx on a graph written for
an old one (``BatchNormalization``'s ``spatial`` attribute of 1.3-1.7 fails onnx's checker,
1.9's ``ReduceMean`` with an ``axes`` attribute is another op at opset 18), and onnx's checker
checks it against that newest opset.  Patch ``onnx``: while an MXNet export runs (its
``export_model`` or ``MXNetGraph.create_onnx_graph_proto``), and only then, ``onnx.mapping``
is there (built from ``onnx.helper``'s dtype functions) and, on the exporting thread,
``onnx.defs.onnx_opset_version()`` and ``onnx.checker.check_graph`` say the opset the
release's exporter writes (``_compat.ONNX_EXPORT_OPSETS``).  Code that never exports an MXNet
model sees onnx unchanged; another thread's onnx calls during an export pass through (only
``onnx.mapping`` is visible to it then).

``mxcompat.to_onnx(model, ...)`` (also ``Module.to_onnx``, ``HybridBlock.to_onnx``) calls
MXNet's own graph converter in memory, returns the ``onnx.ModelProto`` (a file only with
``path``), replaces loss heads by their inference ops as ``to_gluon`` does, makes parameters
initializers only (MXNet's exporter also lists them as graph inputs, which stops onnxruntime
from constant-folding them), and by default runs the model in onnxruntime against MXNet.
onnx and onnxruntime are optional: ``pip install 'mxcompat[onnx]'``.
"""
import contextlib
import json
import sys
import threading
import types

import wrapt

from . import _compat
from ._patching import SharedScope
from .convert._common import _check_flag, _check_shape, _infer_shapes, _names
from .convert.graph import (_block_graph, _block_params, _inference_symbol,
                             _module_inference_symbol, _module_inputs)
from .convert.module_to_gluon import _module_arrays
from ._patching import Patch, Target, register

PATCH = "onnx"
INSTALL_HINT = "pip install 'mxcompat[onnx]'  (or: pip install onnx onnxruntime)"


def _fail(message, error=ValueError):
    return error("mxcompat.to_onnx: %s" % message)


def _import_onnx(what="exporting to ONNX"):
    try:
        import onnx
        import onnx.checker
        import onnx.defs
        import onnx.helper
    except ImportError as err:
        raise ImportError("mxcompat: %s needs the onnx package, which cannot be imported "
                          "here (%s); install it: %s" % (what, err, INSTALL_HINT)) from None
    return onnx


def _import_onnxruntime():
    try:
        import onnxruntime
    except ImportError as err:
        raise ImportError("mxcompat.to_onnx: verify=True runs the exported model in "
                          "onnxruntime, which cannot be imported here (%s); install it (%s) "
                          "or pass verify=False" % (err, INSTALL_HINT)) from None
    return onnxruntime


# --- the scope of an MXNet export ----------------------------------------------------------

_thread = threading.local()   # .opsets: the opset of each export running on this thread


def _opset_here():
    opsets = getattr(_thread, "opsets", None)
    return opsets[-1] if opsets else None


def _mapping_module(onnx):
    """What ``onnx.mapping`` held for MXNet: numpy dtype <-> TensorProto type."""
    helper = onnx.helper
    to_np = {}
    for tensor_type in helper.get_all_tensor_dtypes():
        try:
            to_np[tensor_type] = helper.tensor_dtype_to_np_dtype(tensor_type)
        except Exception:  # pylint: disable=broad-except
            continue   # a type without a NumPy counterpart (e.g. FLOAT4E2M1 without ml_dtypes)
    from_np = {}
    # Lowest type number first: float32 -> FLOAT, uint16 -> UINT16 (not BFLOAT16), as onnx
    # had it.
    for tensor_type in sorted(to_np):
        from_np.setdefault(to_np[tensor_type], tensor_type)
    module = types.ModuleType("onnx.mapping")
    module.__doc__ = "mxcompat's onnx.mapping, there only while an MXNet export runs"
    module.TENSOR_TYPE_TO_NP_TYPE = to_np
    module.NP_TYPE_TO_TENSOR_TYPE = from_np
    return module


def _opset_version(wrapped, instance, args, kwargs):
    opset = _opset_here()
    return opset if opset is not None else wrapped(*args, **kwargs)


def _checker_context(onnx, opset):
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = onnx.IR_VERSION
    ctx.opset_imports = {"": opset}
    return ctx


def _check_graph(wrapped, instance, args, kwargs):
    opset = _opset_here()
    if opset is not None and len(args) < 2 and "ctx" not in kwargs:
        kwargs = dict(kwargs, ctx=_checker_context(sys.modules["onnx"], opset))
    return wrapped(*args, **kwargs)


def _install(onnx):
    undo = []
    if not hasattr(onnx, "mapping"):
        module = _mapping_module(onnx)
        onnx.mapping = module
        sys.modules["onnx.mapping"] = module
        undo.append(_drop_mapping)
    for parent, attr, wrapper in ((onnx.defs, "onnx_opset_version", _opset_version),
                                  (onnx.checker, "check_graph", _check_graph)):
        original = getattr(parent, attr)
        installed = wrapt.FunctionWrapper(original, wrapper)
        setattr(parent, attr, installed)
        undo.append(_restorer(parent, attr, original, installed))
    return undo


def _drop_mapping():
    onnx = sys.modules["onnx"]
    if getattr(onnx, "mapping", None) is sys.modules.get("onnx.mapping"):
        del onnx.mapping
    sys.modules.pop("onnx.mapping", None)


def _restorer(parent, attr, original, installed):
    def restore():
        # Wrapped over by someone else meanwhile: ours stays beneath theirs, and passes
        # every call through outside an export.
        if getattr(parent, attr) is installed:
            setattr(parent, attr, original)
    return restore


def _install_for_exports():
    undos = _install(sys.modules["onnx"])

    def undo():
        for step in reversed(undos):
            step()
    return undo


# What _install changes, in place while any export runs (any thread).
_exports = SharedScope(_install_for_exports)


@contextlib.contextmanager
def _exporting(opset):
    """onnx as MXNet's exporter needs it (see the module docstring), for the duration."""
    onnx = _import_onnx()
    with _exports:
        opsets = _thread.__dict__.setdefault("opsets", [])
        opsets.append(opset)
        try:
            yield onnx
        finally:
            opsets.pop()


# --- what each release's exporter is --------------------------------------------------------

def _mx():
    import mxnet
    return mxnet


def _graph_class():
    module = ("mxnet.onnx.mx2onnx._export_onnx" if _compat.since(_compat.MX_ONNX_PACKAGE)
              else "mxnet.contrib.onnx.mx2onnx.export_onnx")
    __import__(module)
    return sys.modules[module].MXNetGraph


def _opsets():
    """(lowest, highest) opset this release's exporter writes."""
    version = _compat.mxnet_version()
    for since, opsets in reversed(_compat.ONNX_EXPORT_OPSETS):
        if _compat.since(since, version):
            return opsets
    raise RuntimeError("mxcompat: no ONNX exporter known for mxnet %s" % (version,))


def _converters(graph_class, opset):
    """{op name: converter} MXNet's exporter has at ``opset``."""
    registry = graph_class.registry_
    if not _compat.since(_compat.ONNX_REGISTRY_BY_OPSET):
        return dict(registry)
    ops = {}
    # 1.9 falls back from the opset asked to older ones (to 12), as convert_layer does.
    for version in sorted(v for v in registry if v <= opset):
        ops.update(registry[version])
    return ops


def _export_opset(kwargs):
    """The opset an ``export_model`` call writes: the one asked for (1.8's
    ``opset_version``), else the newest this release's exporter knows."""
    asked = kwargs.get("opset_version") if _compat.since(_compat.ONNX_EXPORT_OPSET_ARG) else None
    return asked if asked is not None else _opsets()[1]


def _wrap_export(wrapped, instance, args, kwargs):
    try:
        _import_onnx()
    except ImportError:
        return wrapped(*args, **kwargs)   # MXNet's own "Onnx and protobuf need to be installed"
    opset = _opset_here()
    with _exporting(opset if opset is not None else _export_opset(kwargs)):
        return wrapped(*args, **kwargs)


def _wrap_graph_proto(wrapped, instance, args, kwargs):
    if _opset_here() is not None:   # inside export_model or to_onnx: already set up
        return wrapped(*args, **kwargs)
    return _wrap_export(wrapped, instance, args, kwargs)


# --- to_onnx -----------------------------------------------------------------------------

def _shape_list(input_shapes, inputs, known):
    """One shape per name of ``inputs``, from a dict, a list (in order) or one tuple."""
    if input_shapes is None:
        if all(n in known for n in inputs):
            return [tuple(known[n]) for n in inputs]
        raise _fail("input_shapes is needed for %s (e.g. input_shapes=[(1, 3, 224, 224)] or "
                    "{'data': (1, 3, 224, 224)}); only a bound Module knows its own"
                    % _names(inputs))
    where = "to_onnx"
    if isinstance(input_shapes, dict):
        missing = [n for n in inputs if n not in input_shapes]
        extra = [n for n in input_shapes if n not in inputs]
        if missing or extra:
            raise _fail("input_shapes names %s, the model's inputs are %s"
                        % (_names(input_shapes), _names(inputs)))
        return [_check_shape(input_shapes[n], "input_shapes[%r]" % n, where) for n in inputs]
    if isinstance(input_shapes, (str, bytes)) or not isinstance(input_shapes, (list, tuple)):
        raise _fail("input_shapes is a list of shapes, a dict of them by input name or one "
                    "shape, e.g. [(1, 3, 224, 224)], not %r" % (input_shapes,), TypeError)
    shapes = list(input_shapes)
    if shapes and all(isinstance(s, int) for s in shapes):
        shapes = [shapes]

    def shape_of(s):
        if getattr(s, "shape", None) is not None:
            return s.shape
        if isinstance(s, (list, tuple)) and len(s) == 2 and isinstance(s[0], str):
            return s[1]      # a (name, shape) pair, as in data_shapes
        return s
    shapes = [_check_shape(shape_of(s), "input_shapes[%d]" % i, where)
              for i, s in enumerate(shapes)]
    if len(shapes) != len(inputs):
        raise _fail("%d input shape(s) given, the model has %d input(s): %s"
                    % (len(shapes), len(inputs), _names(inputs)))
    return shapes


def _from_module(module):
    args, auxs, _ = _module_arrays(module, "to_onnx")
    inputs = _module_inputs(module)
    symbol = _module_inference_symbol(module, inputs, args)
    known = {}
    if module.binded:
        known = {d.name if hasattr(d, "name") else d[0]: d.shape if hasattr(d, "shape") else d[1]
                 for d in module.data_shapes}
    params = {n: a[0] for n, a in list(args.items()) + list(auxs.items())}
    return symbol, params, inputs, known


def _from_block(block):
    names, out = _block_graph(block, None if getattr(block, "_cached_graph", ()) else ["data"],
                              "to_onnx")
    symbol = _inference_symbol(out)
    params = _block_params(block)
    used = [n for n in symbol.list_arguments() + symbol.list_auxiliary_states() if n not in names]
    unset = [n for n in used if n not in params or params[n]._data is None]
    if unset:
        raise _fail("parameter(s) %s of the block are not initialised; call initialize() "
                    "and run one forward pass first" % _names(unset))
    if not _compat.since(_compat.GLUON_AUX_WRITES_ORDERED):
        _mx().nd.waitall()   # the last training step's BatchNorm statistics (see convert)
    return symbol, {n: params[n]._data[0] for n in used}, names, {}


def _from_triple(triple):
    mx = _mx()
    if (len(triple) != 3 or not isinstance(triple[0], mx.sym.Symbol)
            or not all(p is None or isinstance(p, dict) for p in triple[1:])):
        raise _fail("a (symbol, arg_params, aux_params) triple was expected (a Symbol and "
                    "two dicts of NDArrays)", TypeError)
    symbol = _inference_symbol(triple[0])
    params = dict(triple[1] or {})
    params.update(triple[2] or {})
    inputs = [n for n in symbol.list_inputs() if n not in params]
    params = {n: v for n, v in params.items() if n in set(symbol.list_inputs())}
    return symbol, params, inputs, {}


def _source(model):
    mx = _mx()
    if isinstance(model, mx.mod.Module):
        return _from_module(model)
    if isinstance(model, mx.gluon.HybridBlock):
        return _from_block(model)
    if isinstance(model, (tuple, list)):
        return _from_triple(model)
    raise _fail("expected a Module, a HybridBlock or a (symbol, arg_params, aux_params) "
                "triple, got %s" % type(model).__name__, TypeError)


def _unconvertible(symbol, converters):
    """{op: [node names]} of the nodes MXNet's exporter has no converter for."""
    found = {}
    for node in json.loads(symbol.tojson())["nodes"]:
        if node["op"] not in converters:
            found.setdefault(node["op"], []).append(node["name"])
    return found


def _without_noop_reshape_like(symbol, shapes):
    """``symbol`` with each ``reshape_like`` whose input already has the shape made a copy.
    The SoftmaxOutput head of to_gluon (``convert.graph._head_symbol``) ends in one, which the
    exporter before 1.9 cannot convert; on a classifier's 2-d output it changes nothing."""
    mx = _mx()
    graph = json.loads(symbol.tojson())
    nodes = graph["nodes"]
    if not any(n["op"] == "reshape_like" for n in nodes):
        return symbol
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shapes)
    shape_of = dict(zip(internals.list_outputs(), out_shapes))

    def entry_shape(e):
        node = nodes[e[0]]
        if node["op"] == "null":
            return shape_of.get(node["name"])
        outputs = [k for k in shape_of if k.startswith(node["name"] + "_output")]
        name = node["name"] + ("_output" if len(outputs) <= 1 else "_output%d" % e[1])
        return shape_of.get(name)

    changed = False
    for node in nodes:
        if node["op"] == "reshape_like" and entry_shape(node["inputs"][0]) is not None \
                and entry_shape(node["inputs"][0]) == entry_shape(node["inputs"][1]):
            node["op"] = "_copy"
            node["inputs"] = node["inputs"][:1]
            node.pop("attrs", None)
            changed = True
    return mx.sym.load_json(json.dumps(graph)) if changed else symbol


def _describe_missing(missing):
    parts = []
    for op, nodes in sorted(missing.items()):
        parts.append("%r (%s)" % (op, "node %r" % nodes[0] if len(nodes) == 1 else
                                  "%d nodes, the first %r" % (len(nodes), nodes[0])))
    return ", ".join(parts)


def _graph_proto(graph_class, symbol, params, shapes, opset):
    onnx = sys.modules["onnx"]
    float_type = onnx.TensorProto.FLOAT
    converter = graph_class()
    if _compat.since(_compat.MX_ONNX_PACKAGE):
        return converter.create_onnx_graph_proto(symbol, params, shapes,
                                                 [float_type] * len(shapes),
                                                 opset_version=opset, dynamic=False)
    if _compat.since(_compat.ONNX_EXPORT_OPSET_ARG):
        return converter.create_onnx_graph_proto(symbol, params, shapes, float_type,
                                                 opset_version=opset)
    return converter.create_onnx_graph_proto(symbol, params, shapes, float_type)


def to_onnx(model, input_shapes=None, path=None, opset=None, verify=True, rtol=1e-4,
            atol=1e-5):
    """``model`` as an ``onnx.ModelProto``, converted by MXNet's own exporter.

    ``model``: a ``Module`` (bound, or with parameters only, as from ``Module.load``), a
    ``HybridBlock`` with initialised parameters (hybridized and run, or callable on a symbol),
    or a ``(symbol, arg_params, aux_params)`` triple.  ``input_shapes``: one shape per input
    (a list in the model's input order, a dict by name, or one tuple); a bound Module's own
    are the default.  Inputs are float32.  Loss heads become their inference ops
    (``SoftmaxOutput`` -> softmax ...), as in ``to_gluon``; parameters are initializers only.
    ``opset``: default the newest this MXNet's exporter writes; others in its range.
    ``path``: also write the model there.  ``verify``: run the model in onnxruntime on a
    seeded random input and compare with MXNet's output (per output, ``|onnx - mxnet| <= atol
    + rtol * max|mxnet|``); a disagreement raises ``AssertionError`` with the largest difference
    and the first node whose output differs.  An operator the exporter cannot convert raises
    ``NotImplementedError`` naming it (and every other one), before anything is converted.
    """
    import numbers
    import os
    verify = _check_flag(verify, "verify", "to_onnx")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not value >= 0):
            raise _fail("%s is a number >= 0, not %r" % (name, value), TypeError
                        if not isinstance(value, numbers.Real) else ValueError)
    if path is not None and not isinstance(path, (str, os.PathLike)):
        # onnx.save takes an int as a file descriptor: the model would go to that fd.
        raise _fail("path is a file name (str or os.PathLike), not %r" % (path,), TypeError)
    if opset is not None and (isinstance(opset, bool) or not isinstance(opset, numbers.Integral)):
        raise _fail("opset is an int, not %r" % (opset,), TypeError)
    _import_onnx("mxcompat.to_onnx")
    if verify:
        _import_onnxruntime()
    mx = _mx()
    symbol, params, inputs, known = _source(model)
    shapes = _shape_list(input_shapes, inputs, known)
    # MXNet's exporter infers shapes itself and fails inside (a TypeError on a None shape).
    _infer_shapes(symbol, dict(zip(inputs, shapes)), "input shape(s)", "to_onnx")
    low, high = _opsets()
    if opset is None:
        opset = high
    elif not low <= opset <= high:
        raise _fail("opset=%r: MXNet %s's exporter writes opset %s" % (
            opset, mx.__version__, low if low == high else "%d to %d" % (low, high)))
    graph_class = _graph_class()
    converters = _converters(graph_class, opset)
    if "reshape_like" not in converters:
        symbol = _without_noop_reshape_like(symbol, dict(zip(inputs, shapes)))
    missing = _unconvertible(symbol, converters)
    if missing:
        raise _fail("MXNet %s's ONNX exporter (opset %d) cannot convert operator%s %s"
                    % (mx.__version__, opset, "s" if len(missing) > 1 else "",
                       _describe_missing(missing)), NotImplementedError)
    with _exporting(opset) as onnx:
        graph = _graph_proto(graph_class, symbol, params, shapes, opset)
    model_proto = _model(onnx, graph, opset)
    if verify:
        _verify(model_proto, symbol, params, inputs, shapes, rtol, atol)
    if path is not None:
        onnx.save(model_proto, path)
    return model_proto


def _model(onnx, graph, opset):
    helper = onnx.helper
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="mxnet+mxcompat")
    finder = getattr(helper, "find_min_ir_version_for", None)
    if finder is not None:
        # The IR version of the opset, not of the installed onnx: onnxruntime releases
        # older than that onnx load it too.  At least 4: from IR 4 an initializer need not be
        # a graph input.
        model.ir_version = max(finder(list(model.opset_import)), 4)
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    del model.graph.input[:]
    model.graph.input.extend(graph_inputs)
    onnx.checker.check_model(model)
    return model


# --- verification ------------------------------------------------------------------------

def _mxnet_outputs(symbol, params, feed):
    mx = _mx()
    executor = symbol.simple_bind(mx.cpu(), grad_req="null",
                                  **{n: v.shape for n, v in feed.items()})
    for arrays in (executor.arg_dict, executor.aux_dict):
        for name, array in arrays.items():
            array[:] = feed[name] if name in feed else params[name]
    return [o.asnumpy() for o in executor.forward(is_train=False)]


def _onnx_outputs(model, feed):
    ort = _import_onnxruntime()
    options = ort.SessionOptions()
    options.log_severity_level = 4   # its errors are raised; printed too, they would repeat
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return names, session.run(None, feed)


def _onnx_name(mx_name):
    return mx_name[:-len("_output")] if mx_name.endswith("_output") else mx_name


def _worst(expected, actual, rtol, atol):
    """(largest |difference|, whether it is beyond tolerance)."""
    import numpy as np
    if expected.shape != actual.shape:
        return float("inf"), True
    if not expected.size:
        return 0.0, False
    expected = expected.astype(np.float64)
    diff = np.abs(actual.astype(np.float64) - expected)
    # Relative to the output's largest value: float32 sums in another order differ by a
    # few ulps of the large terms, which may show in a small element of the result.
    worst = float(diff.max())
    return worst, worst > atol + rtol * float(np.abs(expected).max())


def _verify(model, symbol, params, inputs, shapes, rtol, atol):
    import numpy as np
    rng = np.random.RandomState(0)
    feed = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in zip(inputs, shapes)}
    expected = _mxnet_outputs(symbol, params, feed)
    try:
        names, actual = _onnx_outputs(model, feed)
    except Exception as err:  # pylint: disable=broad-except
        # onnxruntime's own exception types differ between its releases.
        raise AssertionError(
            "mxcompat.to_onnx: onnxruntime %s cannot run the model MXNet %s's exporter wrote "
            "(opset %d): %s" % (sys.modules["onnxruntime"].__version__, _mx().__version__,
                                model.opset_import[0].version, str(err).strip())) from None
    by_name = dict(zip(names, actual))
    mx_names = symbol.list_outputs()
    if len(names) == 1 and len(mx_names) == 1:
        pairs = [(mx_names[0], expected[0], actual[0])]
    else:
        pairs = [(n, e, by_name.get(_onnx_name(n), by_name.get(n)))
                 for n, e in zip(mx_names, expected)]
    failures = []
    for name, e, a in pairs:
        if a is None:
            failures.append((name, float("inf")))
            continue
        worst, bad = _worst(e, a, rtol, atol)
        if bad:
            failures.append((name, worst))
    if failures:
        raise AssertionError(
            "mxcompat.to_onnx: onnxruntime's output differs from MXNet's beyond "
            "atol=%g, rtol=%g: %s; %s" % (
                atol, rtol, ", ".join("%s: largest difference %.3g" % f for f in failures),
                _first_difference(model, symbol, params, feed, rtol, atol)))


@contextlib.contextmanager
def _no_subgraph_backend():
    """MXNet's oneDNN builds (1.7+) partition a graph into fused subgraphs at bind; one whose
    inner outputs are all graph outputs fails to bind ("in_arg_ctx_map").  MXNet reads
    MXNET_SUBGRAPH_BACKEND at each bind: off for this one (a diagnosis, after a failure)."""
    import os
    if not _compat.has_mkldnn():   # 1.5 refuses the name NONE; without oneDNN, no partition
        yield
        return
    saved = os.environ.get("MXNET_SUBGRAPH_BACKEND")
    os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MXNET_SUBGRAPH_BACKEND", None)
        else:
            os.environ["MXNET_SUBGRAPH_BACKEND"] = saved


def _first_difference(model, symbol, params, feed, rtol, atol):
    """Which node's output first differs, in MXNet's order, comparing every intermediate
    output MXNet and the ONNX graph both name."""
    onnx = sys.modules["onnx"]
    internals = symbol.get_internals()
    mx_names = internals.list_outputs()
    produced = set()
    for node in model.graph.node:
        produced.update(node.output)
    variables = set(symbol.list_inputs())
    wanted = [n for n in mx_names if n not in variables and _onnx_name(n) in produced]
    if not wanted:
        return "no intermediate output could be compared"
    probe = type(model)()
    probe.CopyFrom(model)
    existing = {o.name for o in probe.graph.output}
    for name in wanted:
        if _onnx_name(name) not in existing:
            probe.graph.output.append(onnx.helper.make_empty_tensor_value_info(_onnx_name(name)))
    try:
        # Only the operators' outputs: a Group of the internals with their variables
        # cannot be bound on every release.
        probe_symbol = _mx().sym.Group([internals[mx_names.index(n)] for n in wanted])
        with _no_subgraph_backend():
            expected = dict(zip(wanted, _mxnet_outputs(probe_symbol, params, feed)))
        names, actual = _onnx_outputs(probe, feed)
    except Exception as err:  # pylint: disable=broad-except
        return "the intermediate outputs could not be compared (%s: %s)" % (
            type(err).__name__, err)
    got = dict(zip(names, actual))
    ops = {n["name"]: n["op"] for n in json.loads(symbol.tojson())["nodes"]}
    for name in wanted:
        worst, bad = _worst(expected[name], got[_onnx_name(name)], rtol, atol)
        if bad:
            node = _onnx_name(name)
            return "the first node that differs is %r (%s), largest difference %.3g" % (
                node, ops.get(node, "?"), worst)
    return "no intermediate output differs"


register(Patch(
    PATCH,
    "MXNet's own ONNX exporter works with today's onnx (onnx.mapping, the opset it writes); "
    "Module.to_onnx() and HybridBlock.to_onnx(): verified ONNX models in memory.",
    targets=[
        # 1.9: mxnet.onnx (contrib.onnx.export_model calls export_model_, the same function)
        Target("mxnet.onnx", "export_model", _wrap_export, optional=True),
        Target("mxnet.onnx.mx2onnx", "export_model", _wrap_export, optional=True),
        Target("mxnet.onnx.mx2onnx._export_model", "export_model", _wrap_export,
               optional=True),
        Target("mxnet.contrib.onnx", "export_model_", _wrap_export, optional=True),
        Target("mxnet.onnx.mx2onnx._export_onnx", "MXNetGraph.create_onnx_graph_proto",
               _wrap_graph_proto, optional=True),
        # 1.3-1.8: mxnet.contrib.onnx
        Target("mxnet.contrib.onnx", "export_model", _wrap_export, optional=True),
        Target("mxnet.contrib.onnx.mx2onnx.export_model", "export_model", _wrap_export,
               optional=True),
        Target("mxnet.contrib.onnx.mx2onnx.export_onnx", "MXNetGraph.create_onnx_graph_proto",
               _wrap_graph_proto, optional=True),
        Target("mxnet.module.module", "Module.to_onnx", new=to_onnx),
        Target("mxnet.gluon.block", "HybridBlock.to_onnx", new=to_onnx),
    ],
))
