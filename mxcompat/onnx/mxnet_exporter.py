"""MXNet's own exporter on today's onnx: the scope of an export (``onnx.mapping`` there, the
opset the release writes on the exporting thread) and what each release's exporter is."""

import contextlib
import re
import sys
import threading
import types

import wrapt

from .._core import facts
from .._core.scope import SharedScope

INSTALL_HINT = "pip install 'mxcompat[onnx]'  (or: pip install onnx onnxruntime)"


def _import_onnx(what="exporting to ONNX"):
    try:
        import onnx
        import onnx.checker
        import onnx.defs
        import onnx.helper
    except ImportError as err:
        raise ImportError(
            "mxcompat: %s needs the onnx package, which cannot be imported "
            "here (%s); install it: %s" % (what, err, INSTALL_HINT)
        ) from None
    return onnx


def _import_onnxruntime():
    try:
        import onnxruntime
    except ImportError as err:
        raise ImportError(
            "mxcompat.to_onnx: verify=True runs the exported model in "
            "onnxruntime, which cannot be imported here (%s); install it (%s) "
            "or pass verify=False" % (err, INSTALL_HINT)
        ) from None
    return onnxruntime


# --- the scope of an MXNet export ----------------------------------------------------------

# .exports: (opset, raw_weights, own) of each export running on this thread, the innermost
# last; own: ``converters.OwnConverters`` for a ``to_onnx`` export, else None.
_thread = threading.local()


def _export_here():
    exports = getattr(_thread, "exports", None)
    return exports[-1] if exports else (None, False, None)


def _opset_here():
    return _export_here()[0]


def _mapping_module(onnx):
    """What ``onnx.mapping`` held for MXNet: numpy dtype <-> TensorProto type."""
    helper = onnx.helper
    to_np = {}
    for tensor_type in helper.get_all_tensor_dtypes():
        try:
            to_np[tensor_type] = helper.tensor_dtype_to_np_dtype(tensor_type)
        except Exception:
            continue  # a type without a NumPy counterpart (e.g. FLOAT4E2M1 without ml_dtypes)
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


# Below this many values a weight keeps MXNet's own encoding (the converters' constants).
_RAW_FROM = 1024


def _make_tensor(wrapped, instance, args, kwargs):
    """Inside ``to_onnx``: a large float weight as raw little-endian bytes.  Every release writes
    each weight as ``make_tensor(..., vals=array.flatten().tolist(), raw=False)``, which protobuf
    copies one Python float at a time (6 of 9.6 s of a VGG-11 export); the values and the
    model's meaning are the same, only the field that holds them differs."""
    if _export_here()[1] and not kwargs.get("raw", False) and len(args) == 0:
        onnx = sys.modules["onnx"]
        vals, data_type = kwargs.get("vals"), kwargs.get("data_type")
        dtype = {onnx.TensorProto.FLOAT: "<f4", onnx.TensorProto.DOUBLE: "<f8"}.get(data_type)
        if dtype is not None and isinstance(vals, list) and len(vals) >= _RAW_FROM:
            import numpy as np

            data = np.asarray(vals, dtype=dtype).tobytes()
            return wrapped(kwargs["name"], data_type, kwargs["dims"], data, raw=True)
    return wrapped(*args, **kwargs)


class ConverterRefused(Exception):
    """A converter (MXNet's or ours) refused a node in a ``to_onnx`` export: node, op, reason."""

    def __init__(self, node, reason):
        super().__init__(node["name"], node["op"], reason)


def _convert_layer(wrapped, instance, args, kwargs):
    """In a ``to_onnx`` export: our converter where there is one (``converters``), and a
    converter's refusal (MXNet's raise NotImplementedError or AttributeError partway) raised as
    ``ConverterRefused`` with its node, which ``to_onnx`` words."""
    own = _export_here()[2]
    if own is None:
        return wrapped(*args, **kwargs)
    from .converters import Limit

    node = args[0] if args else kwargs["node"]
    try:
        converted = own.convert(node, kwargs)
        return wrapped(*args, **kwargs) if converted is None else converted
    except (Limit, NotImplementedError, AttributeError) as err:
        raise ConverterRefused(node, str(err).strip() or type(err).__name__) from None


def _install(onnx):
    undo = []
    if not hasattr(onnx, "mapping"):
        module = _mapping_module(onnx)
        onnx.mapping = module
        sys.modules["onnx.mapping"] = module
        undo.append(_drop_mapping)
    for parent, attr, wrapper in (
        (onnx.defs, "onnx_opset_version", _opset_version),
        (onnx.checker, "check_graph", _check_graph),
        (onnx.helper, "make_tensor", _make_tensor),
    ):
        original = getattr(parent, attr)
        installed = wrapt.FunctionWrapper(original, wrapper)
        setattr(parent, attr, installed)
        undo.append(_restorer(parent, attr, original, installed))
    graph_class = _graph_class()
    original = graph_class.__dict__["convert_layer"]
    installed = staticmethod(wrapt.FunctionWrapper(original.__func__, _convert_layer))
    graph_class.convert_layer = installed
    undo.append(_class_restorer(graph_class, "convert_layer", original, installed))
    return undo


def _class_restorer(cls, attr, original, installed):
    def restore():
        if cls.__dict__.get(attr) is installed:
            setattr(cls, attr, original)

    return restore


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
def _exporting(opset, raw_weights=False, own=None):
    """onnx as MXNet's exporter needs it (see the module docstring), for the duration;
    ``raw_weights``: its large float weights written as raw bytes, ``own``: our converters
    beside MXNet's (both ``to_onnx``'s; MXNet's own ``export_model`` writes what it always
    wrote)."""
    onnx = _import_onnx()
    with _exports:
        exports = _thread.__dict__.setdefault("exports", [])
        exports.append((opset, raw_weights, own))
        try:
            yield onnx
        finally:
            exports.pop()


# --- what each release's exporter is --------------------------------------------------------


def _graph_class():
    module = (
        "mxnet.onnx.mx2onnx._export_onnx"
        if facts.since(facts.MX_ONNX_PACKAGE)
        else "mxnet.contrib.onnx.mx2onnx.export_onnx"
    )
    __import__(module)
    return sys.modules[module].MXNetGraph


def _opsets():
    """(lowest, highest) opset this release's exporter writes."""
    version = facts.mxnet_version()
    for since, opsets in reversed(facts.ONNX_EXPORT_OPSETS):
        if facts.since(since, version):
            return opsets
    raise RuntimeError("mxcompat: no ONNX exporter known for mxnet %s" % (version,))


def _converters(graph_class, opset):
    """{op name: converter} MXNet's exporter has at ``opset``."""
    registry = graph_class.registry_
    if not facts.since(facts.ONNX_REGISTRY_BY_OPSET):
        return dict(registry)
    ops = {}
    # 1.9 falls back from the opset asked to older ones (to 12), as convert_layer does.
    for version in sorted(v for v in registry if v <= opset):
        ops.update(registry[version])
    return ops


def _onnx_name(mx_name):
    """The ONNX name of MXNet output ``mx_name``, as MXNet's exporter names it (1.9: an RNN's
    states ``<node>1``/``<node>2``, output i of a node ``<node>i``; before: ``_output`` off)."""
    for suffix, index in (("_state_output", "1"), ("_statecell_output", "2")):
        if mx_name.endswith(suffix) and facts.since(facts.MX_ONNX_PACKAGE):
            return mx_name[: -len(suffix)] + index
    if mx_name.endswith("_output"):
        return mx_name[: -len("_output")]
    match = re.match(r"(.*)_output([0-9]+)$", mx_name)
    if match and facts.since(facts.MX_ONNX_PACKAGE):
        return match.group(1) + match.group(2)
    return mx_name


def _export_opset(kwargs):
    """The opset an ``export_model`` call writes: the one asked for (1.8's
    ``opset_version``), else the newest this release's exporter knows."""
    asked = kwargs.get("opset_version") if facts.since(facts.ONNX_EXPORT_OPSET_ARG) else None
    return asked if asked is not None else _opsets()[1]


def wrap_export(wrapped, instance, args, kwargs):
    try:
        _import_onnx()
    except ImportError:
        return wrapped(*args, **kwargs)  # MXNet's own "Onnx and protobuf need to be installed"
    opset = _opset_here()
    with _exporting(opset if opset is not None else _export_opset(kwargs)):
        return wrapped(*args, **kwargs)


def wrap_graph_proto(wrapped, instance, args, kwargs):
    if _opset_here() is not None:  # inside export_model or to_onnx: already set up
        return wrapped(*args, **kwargs)
    return wrap_export(wrapped, instance, args, kwargs)
