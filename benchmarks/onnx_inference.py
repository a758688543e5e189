"""Section ``onnx``: ``to_onnx``'s model in onnxruntime vs the same net as a bound MXNet
Module (``forward`` + ``asnumpy``), one ORT intra-op thread per ``OMP_NUM_THREADS``
(MXNet's), per configuration; and the export once per model: MXNet's own ``export_model``
(to a file) vs ``to_onnx`` without and with verification.  Skipped (one line) without onnx
and onnxruntime."""

import os
import shutil
import tempfile

import mxnet as mx
import numpy as np

import mxcompat

from ._harness import interleave
from .models import config_label, gluon_net


def run(table, configs, reps):
    """The exported model in onnxruntime vs MXNet's own inference (a bound Module, as legacy
    serving code has it), same input, same thread count; and the export itself."""
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
    except ImportError:
        print("onnx: skipped (needs onnx and onnxruntime: pip install 'mxcompat[onnx]')")
        return
    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)
    exported = set()
    for name, size, batch in configs:
        net = gluon_net(name, size)
        shape = (batch, 3, size, size)
        label = config_label(name, size, batch)
        if (name, size) not in exported:
            exported.add((name, size))
            _bench_export(table, net, shape, label, max(1, reps // 10))
        model = mxcompat.to_onnx(net, [shape])  # verified once, untimed
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        mod = mxcompat.to_module(net, data_shapes=[("data", shape)])
        x = np.random.RandomState(0).uniform(-1, 1, shape).astype("float32")
        batch_nd = mx.io.DataBatch([mx.nd.array(x)])

        def mxnet_side():
            mod.forward(batch_nd, is_train=False)
            return mod.get_outputs()[0].asnumpy()

        def onnx_side():
            return session.run(None, {"data": x})[0]

        times = interleave({"mxnet": mxnet_side, "onnxruntime": onnx_side}, reps)
        table.add(
            "Inference %s, %d thread(s)" % (label, threads),
            "MXNet Module.forward",
            times["mxnet"],
            "onnxruntime (to_onnx)",
            times["onnxruntime"],
        )


def _bench_export(table, net, shape, label, reps):
    workdir = tempfile.mkdtemp(prefix="mxcompat-bench-onnx-")
    symbol = net._cached_graph[1]
    params = {p.name: p.data() for p in net.collect_params().values()}
    path = os.path.join(workdir, "m.onnx")
    from mxcompat._core import facts

    if facts.since(facts.MX_ONNX_PACKAGE):
        export = mx.onnx.export_model
    else:
        export = mx.contrib.onnx.export_model
    try:
        times = interleave(
            {
                "mxnet": lambda: export(symbol, params, [shape], np.float32, path),
                "to_onnx": lambda: mxcompat.to_onnx(net, [shape], verify=False),
                "verified": lambda: mxcompat.to_onnx(net, [shape]),
            },
            reps,
            warmup=0,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    table.add(
        "ONNX export %s" % label.split(" b")[0],
        "MXNet export_model (file)",
        times["mxnet"],
        "to_onnx(verify=False)",
        times["to_onnx"],
    )
    table.add(
        "ONNX export %s, verified" % label.split(" b")[0],
        "MXNet export_model (file)",
        times["mxnet"],
        "to_onnx (onnxruntime check)",
        times["verified"],
    )
