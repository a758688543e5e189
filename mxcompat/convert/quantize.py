"""``mxcompat.quantize``: int8/uint8 quantization of a Module or a Gluon block, per release.

MXNet's ``contrib.quantization`` takes ``(sym, arg_params, aux_params)``, so a Gluon model had
to go through files first, and which function gives a graph that runs depends on the release
and the build: on CPU, plain ``quantize_model``'s output fails at forward on a
conv + BatchNorm + pool net ("could not create a primitive descriptor iterator", or
"Quantized BN currently don't support calib_mode=None"), while ``quantize_model_mkldnn``
(1.6+, MKLDNN builds) fuses and runs.  Builds without MKLDNN (the pip wheels before 1.7)
have no CPU kernels for quantized convolution: their quantized graphs raise or crash the
interpreter at bind, so ``quantize`` refuses them up front with the reason.
"""

from __future__ import annotations

from .._core import facts
from .._core.conversion import fail, quoted
from ._common import _check_bind_shapes, _check_contexts, _check_descs, _check_names_list
from .model import model_graph

# Names for annotations only: type checkers take this block as run, Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, List, Sequence, Tuple, Union

    import numpy as np
    from mxnet.context import Context
    from mxnet.gluon import HybridBlock
    from mxnet.io import DataDesc, DataIter
    from mxnet.module import Module
    from mxnet.ndarray import NDArray
    from mxnet.symbol import Symbol

    Array = Union[NDArray, np.ndarray]
    Names = Union[List[str], Tuple[str, ...]]
    Shape = Union[Tuple[str, Tuple[int, ...]], DataDesc]

_CALIB_MODES = ("none", "naive", "entropy")
_DTYPES = ("int8", "uint8", "auto")


def _function_name(ctx):
    return "quantize_model_mkldnn" if ctx.device_type == "cpu" else "quantize_model"


def _accepted_options(qz, ctx):
    import inspect

    function = getattr(qz, _function_name(ctx), None) or qz.quantize_model
    return set(inspect.signature(function).parameters)


def _calib_iter(mx, calib_data, data_names):
    if calib_data is None or isinstance(calib_data, mx.io.DataIter):
        return calib_data
    # An array (or a list, one per input): batches of at most 32 examples.
    arrays = list(calib_data) if isinstance(calib_data, (list, tuple)) else [calib_data]
    import numpy as np

    if not arrays or not all(isinstance(a, (mx.nd.NDArray, np.ndarray)) for a in arrays):
        raise fail(
            "quantize",
            "calib_data is a DataIter, an NDArray (or NumPy array) or a "
            "list of them, one per input, not %r" % (calib_data,),
            TypeError,
        )
    if len(arrays) != len(data_names):
        raise fail(
            "quantize",
            "calib_data has %d array(s), the model has %d input(s): %s"
            % (len(arrays), len(data_names), quoted(data_names)),
        )
    if not all(a.ndim and a.shape[0] for a in arrays) or len(set(a.shape[0] for a in arrays)) != 1:
        raise fail(
            "quantize",
            "calib_data's arrays need the same number (> 0) of examples "
            "along their first axis, not shapes %s"
            % ", ".join(str(tuple(a.shape)) for a in arrays),
        )
    batch = min(32, arrays[0].shape[0])
    return mx.io.NDArrayIter(dict(zip(data_names, arrays)), batch_size=batch)


def quantize(
    model: Module | HybridBlock | tuple[Symbol, dict[str, NDArray], dict[str, NDArray]],
    calib_data: DataIter | Array | list[Array] | tuple[Array, ...] | None = None,
    calib_mode: str = "naive",
    quantized_dtype: str = "uint8",
    num_calib_examples: int | None = None,
    excluded_sym_names: Names | None = None,
    ctx: Context | None = None,
    data_names: Names | None = None,
    data_shapes: Sequence[Shape] | None = None,
    **kwargs: Any,
) -> Module:
    """Quantize ``model`` and return a ``Module`` of the quantized graph.

    ``model``: a ``Module`` with parameters, a ``HybridBlock`` (its graph and its own arrays:
    nothing copied) or a ``(symbol, arg_params, aux_params)`` tuple.  Loss heads are replaced
    by their inference op first (as in ``to_gluon``), so the quantized module needs no label.
    ``calib_data``: a ``DataIter`` or an array (or a list of arrays, one per input) for
    ``calib_mode='naive'`` (min/max of each layer's output) or ``'entropy'``;
    ``calib_mode='none'`` needs none.  ``ctx`` (default CPU) runs the
    calibration; on CPU ``quantize_model_mkldnn`` is used (fused oneDNN graph), elsewhere
    ``quantize_model``.  Further keyword arguments go to that MXNet function.

    The returned module holds the quantized parameters (bound when ``data_shapes`` are given)
    and is independent of ``model``.  On a CPU without an MKLDNN build (pip wheels before 1.7)
    this raises ``RuntimeError``: MXNet's quantized CPU operators cannot run there.
    """
    import mxnet as mx

    qz = mx.contrib.quantization
    where = "quantize"
    # Every argument checked before the model is converted or MXNet is called: MXNet's own
    # errors come from deep inside calibration, after the work (or never: a typo'd
    # keyword is a TypeError of the function it reaches).
    contexts = _check_contexts(ctx, "ctx", where)
    if contexts is not None and len(contexts) != 1:
        raise fail(where, "ctx is one mx.Context, not %r" % (ctx,), TypeError)
    ctx = contexts[0] if contexts else mx.cpu()
    if calib_mode not in _CALIB_MODES:
        raise fail(where, "calib_mode=%r: expected one of %s" % (calib_mode, quoted(_CALIB_MODES)))
    if quantized_dtype not in _DTYPES:
        raise fail(
            where, "quantized_dtype=%r: expected one of %s" % (quantized_dtype, quoted(_DTYPES))
        )
    if calib_mode != "none" and calib_data is None:
        raise fail(
            where,
            "calib_mode=%r needs calib_data (a DataIter, an array or a list "
            "of arrays), or calib_mode='none'" % calib_mode,
        )
    if num_calib_examples is not None and (
        isinstance(num_calib_examples, bool)
        or not isinstance(num_calib_examples, int)
        or num_calib_examples <= 0
    ):
        raise fail(
            where, "num_calib_examples is a positive int, not %r" % (num_calib_examples,), TypeError
        )
    if excluded_sym_names is not None:
        excluded_sym_names = _check_names_list(excluded_sym_names, "excluded_sym_names", where)
    data_names = _check_names_list(data_names, "data_names", where)
    if data_shapes is not None:
        data_shapes = _check_descs(data_shapes, "data_shapes", where)
    unknown = sorted(set(kwargs) - _accepted_options(qz, ctx))
    if unknown:
        raise fail(
            where,
            "unknown keyword argument(s) %s for MXNet %s's %s"
            % (quoted(unknown), mx.__version__, _function_name(ctx)),
            TypeError,
        )
    if quantized_dtype == "auto" and not facts.since(facts.QUANTIZE_AUTO_DTYPE):
        raise ValueError(
            "mxcompat.quantize: quantized_dtype='auto' needs MXNet 1.5 or later "
            "(this is %s); use 'int8' or 'uint8'" % mx.__version__
        )
    symbol, arg_params, aux_params, data_names = model_graph(model, where, data_names)

    calib_data = _calib_iter(mx, calib_data, data_names)
    shapes = None
    if data_shapes is not None:
        _check_bind_shapes(symbol, data_names, [], data_shapes, None, where)
    elif isinstance(calib_data, mx.io.DataIter):
        shapes = [(d.name, tuple(d.shape)) for d in calib_data.provide_data]
        _check_bind_shapes(symbol, data_names, [], shapes, None, where)
    if ctx.device_type == "cpu":
        if not (facts.since(facts.QUANTIZE_MODEL_MKLDNN) and facts.has_mkldnn()):
            raise RuntimeError(
                "mxcompat.quantize: MXNet %s runs quantized graphs on CPU only in a build with "
                "MKLDNN (oneDNN) and quantize_model_mkldnn (the pip wheels from 1.7); this build "
                "has none, and its quantized CPU operators fail or crash the process. Quantize "
                "for a GPU context (ctx=mx.gpu()) or use an MKLDNN build." % mx.__version__
            )
        function = qz.quantize_model_mkldnn
    else:
        function = qz.quantize_model
    options = dict(
        data_names=tuple(data_names),
        label_names=(),
        ctx=ctx,
        excluded_sym_names=excluded_sym_names,
        calib_mode=calib_mode,
        calib_data=calib_data,
        num_calib_examples=num_calib_examples,
        quantized_dtype=quantized_dtype,
    )
    options.update(kwargs)
    qsym, qargs, qauxs = function(symbol, arg_params, aux_params, **options)

    # Unquantized parameters come back as the very arrays given: copy them, so the result
    # never shares with the model (which, from a block, shares with the block).
    given = {id(a) for a in list(arg_params.values()) + list(aux_params.values())}
    qargs = {k: (v.copy() if id(v) in given else v) for k, v in qargs.items()}
    qauxs = {k: (v.copy() if id(v) in given else v) for k, v in qauxs.items()}
    mod = mx.mod.Module(qsym, data_names=data_names, label_names=[], context=ctx)
    if data_shapes is not None:
        mod.bind(data_shapes=data_shapes, for_training=False)
        mod.set_params(qargs, qauxs, allow_missing=False, allow_extra=True)
    else:
        names = set(qsym.list_arguments())
        mod._arg_params = {k: v for k, v in qargs.items() if k in names}
        auxs = set(qsym.list_auxiliary_states())
        mod._aux_params = {k: v for k, v in qauxs.items() if k in auxs}
        mod.params_initialized = True
    return mod
