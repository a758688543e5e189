"""Section ``convert``: ``to_gluon`` / ``to_module``, unbound, with copies vs copying every
weight once and vs the file round trip users do today (``save_checkpoint`` ->
``SymbolBlock.imports``; ``export`` -> ``Module.load``), shared (``copy=False``) vs the file
round trip and (``to_gluon``) vs MXNet's floor, its ``SymbolBlock`` built without weights;
bound ``to_module(data_shapes=...)`` vs ``Module(sym).bind()`` + ``set_params()``.

Conversions run once per model (the bound pair at batch 1 and the model's largest input
side).  The source Module of ``to_gluon`` is an unbound inference Module (``Module.load(...,
label_names=None)`` of an export, no loss head) so that the file round trip it is compared
with loads as it is.  Only mxcompat's public ``to_gluon``/``to_module`` are called."""

import gc
import os
import shutil
import tempfile
import warnings

import mxnet as mx

import mxcompat

from ._harness import interleave
from .models import gluon_net, inference_module, param_data

_results = []  # the last conversion's result, alive until the next side's setup


def _waited(func):
    """``func`` and the engine work it queued; its result is kept (a conversion's result is
    used), so its arrays are freed untimed, not while the next array is being copied."""

    def run():
        _results[:] = [func()]
        mx.nd.waitall()

    return run


FLOOR = "SymbolBlock(sym, data) alone"
FLOOR_TARGET = "<= 1.2x"

# (copy vs one copy of every weight, share vs the file round trip): Module->Gluon's set when its
# conversion was made to share weights, Gluon->Module's from before.
CONVERT_TARGETS = {
    "Module->Gluon": ("<= 1.3x", "<= 0.033x (>= 30x faster)"),
    "Gluon->Module": ("<= 1.5x", "<= 0.05x (>= 20x faster)"),
}


def conversion_sides(net, mod, workdir):
    """The unbound conversions of both directions, each a callable (with waitall)."""
    from mxnet import gluon

    mod_arrays = list(mod._arg_params.values()) + list(mod._aux_params.values())
    net_arrays = param_data(net)
    ckpt, exported = os.path.join(workdir, "ckpt"), os.path.join(workdir, "exported")

    def checkpoint_roundtrip():
        # What Module.save_checkpoint writes; the Module method itself needs a bound module
        # before MXNet 1.6 (get_params asserts it).
        mx.model.save_checkpoint(ckpt, 0, mod.symbol, mod._arg_params, mod._aux_params)
        return gluon.SymbolBlock.imports(ckpt + "-symbol.json", ["data"], ckpt + "-0000.params")

    def export_roundtrip():
        net.export(exported)
        return mx.mod.Module.load(exported, 0, label_names=None)

    def symbol_block_alone():
        # MXNet's floor for a Gluon model of the module: its SymbolBlock, no weights.
        return gluon.SymbolBlock(mod.symbol, [mx.sym.var("data", dtype="float32")])

    to_gluon = {
        "copy every weight once": lambda: [a.copy() for a in mod_arrays],
        "to_gluon(copy=True)": lambda: mxcompat.to_gluon(mod),
        "to_gluon(copy=False)": lambda: mxcompat.to_gluon(mod, copy=False),
        "save_checkpoint+imports": checkpoint_roundtrip,
        FLOOR: symbol_block_alone,
    }
    to_module = {
        "copy every weight once": lambda: [a.copy() for a in net_arrays],
        "to_module(copy=True)": lambda: mxcompat.to_module(net),
        "to_module(copy=False)": lambda: mxcompat.to_module(net, copy=False),
        "export+Module.load": export_roundtrip,
    }
    return to_gluon, to_module


def conversion_models(configs):
    """Each model once, with its largest input side (the bound pair binds batch 1 at it)."""
    sizes = {}
    for name, size, _ in configs:
        sizes[name] = max(size, sizes.get(name, 0))
    return sorted(sizes.items())


def _malloc_trim():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return lambda pad: 0


_trim = _malloc_trim()


def _collect(side):
    """Every conversion starts from the same allocator state: the previous result freed
    (converted models hold reference cycles, and the harness turns gc off) and nothing freed
    still resident, so each side pays for the fresh pages it writes, as a one-off conversion
    does.  Otherwise glibc hands some sides the resident memory another side just freed,
    and the ratios jumped between runs."""
    del _results[:]
    gc.collect()
    mx.nd.waitall()  # MXNet frees arrays through its engine
    _trim(0)


def run(table, configs, reps):
    with warnings.catch_warnings():
        # SymbolBlock.imports: "Cannot decide type for the following arguments" (data).
        warnings.simplefilter("ignore", UserWarning)
        _bench_convert(table, configs, reps)


def _bench_convert(table, configs, reps):
    for name, size in conversion_models(configs):
        workdir = tempfile.mkdtemp(prefix="mxcompat-bench-")
        try:
            net = gluon_net(name, size)
            mod = inference_module(net, workdir)
            weights = sum(a.size * 4 for a in param_data(net)) / 2.0**20
            model = "%s (%.0f MB of weights)" % (name.replace("_v1", ""), weights)
            to_gluon, to_module = conversion_sides(net, mod, workdir)

            for direction, sides in (("Module->Gluon", to_gluon), ("Gluon->Module", to_module)):
                base, copy, share, files = list(sides)[:4]
                copy_target, share_target = CONVERT_TARGETS[direction]
                # Two interleavings.  Interleaved with the file round trip, the copying
                # conversion measured 1.5-3x slower than beside a plain copy (state the file
                # loads leave behind; not reproducible in isolation), which would blur its
                # ratio to the plain copy.
                times = interleave(
                    {k: _waited(sides[k]) for k in (base, copy)}, reps, setup=_collect
                )
                table.add(
                    "%s %s: copy" % (direction, model),
                    base,
                    times[base],
                    copy,
                    times[copy],
                    copy_target,
                )
                keys = (files, copy, share) + ((FLOOR,) if FLOOR in sides else ())
                times = interleave({k: _waited(sides[k]) for k in keys}, reps, setup=_collect)
                table.add(
                    "%s %s: copy vs files" % (direction, model),
                    files,
                    times[files],
                    copy,
                    times[copy],
                    "< 1 (faster)",
                )
                table.add(
                    "%s %s: share vs files" % (direction, model),
                    files,
                    times[files],
                    share,
                    times[share],
                    share_target,
                )
                if FLOOR in times:
                    table.add(
                        "%s %s: share vs MXNet's floor" % (direction, model),
                        FLOOR,
                        times[FLOOR],
                        share,
                        times[share],
                        FLOOR_TARGET,
                    )

            # Bound, ready to predict: what a user writes without mxcompat.
            shapes = [("data", (1, 3, size, size))]
            symbol = net(mx.sym.var("data"))
            arg_names = set(symbol.list_arguments())
            aux_names = set(symbol.list_auxiliary_states())
            params = net.collect_params()
            arg = {k: p.data() for k, p in params.items() if k in arg_names}
            aux = {k: p.data() for k, p in params.items() if k in aux_names}

            def bare():
                m = mx.mod.Module(symbol, label_names=None)
                m.bind(data_shapes=shapes, for_training=False)
                m.set_params(arg, aux)

            def converted():
                mxcompat.to_module(net, data_shapes=shapes)

            times = interleave(
                {"bind+set_params": _waited(bare), "to_module(data_shapes)": _waited(converted)},
                reps,
                setup=_collect,
            )
            table.add(
                "Gluon->Module %s bound 1x3x%dx%d" % (name.replace("_v1", ""), size, size),
                "Module(sym).bind+set_params",
                times["bind+set_params"],
                "to_module(data_shapes=...)",
                times["to_module(data_shapes)"],
                "<= 1.1x",
            )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        net = mod = None  # free this model's memory before the next one
        gc.collect()
