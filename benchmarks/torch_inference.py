"""Section ``torch``: ``to_torch``'s module (eval, ``torch.no_grad``, the same thread count as
MXNet's ``OMP_NUM_THREADS``) vs the same net as a bound MXNet Module (``forward`` +
``asnumpy``), per configuration; and the conversion once per model, without and with
node-by-node verification.  Skipped (one line) without torch."""

import os

import mxnet as mx
import numpy as np

import mxcompat

from ._harness import interleave
from .models import config_label, gluon_net


def run(table, configs, reps):
    """The converted module vs MXNet's own inference, same input, same thread count; and the
    conversion itself."""
    try:
        import torch
    except ImportError:
        print("torch: skipped (needs torch: pip install 'mxcompat[torch]')")
        return
    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)
    torch.set_num_threads(threads)
    converted = set()
    for name, size, batch in configs:
        net = gluon_net(name, size)
        shape = (batch, 3, size, size)
        label = config_label(name, size, batch)
        if (name, size) not in converted:
            converted.add((name, size))
            times = interleave(
                {
                    "fast": lambda: mxcompat.to_torch(net, [shape], verify=False),
                    "verified": lambda: mxcompat.to_torch(net, [shape]),
                },
                max(1, reps // 10),
                warmup=0,
            )
            table.add(
                "to_torch %s" % label.split(" b")[0],
                "to_torch(verify=False)",
                times["fast"],
                "to_torch (every node checked)",
                times["verified"],
            )
        module = mxcompat.to_torch(net, [shape])  # verified once, untimed
        mod = mxcompat.to_module(net, data_shapes=[("data", shape)])
        x = np.random.RandomState(0).uniform(-1, 1, shape).astype("float32")
        batch_nd = mx.io.DataBatch([mx.nd.array(x)])
        xt = torch.from_numpy(x)

        def mxnet_side():
            mod.forward(batch_nd, is_train=False)
            return mod.get_outputs()[0].asnumpy()

        def torch_side():
            with torch.no_grad():
                return module(xt).numpy()

        times = interleave({"mxnet": mxnet_side, "torch": torch_side}, reps)
        table.add(
            "Inference %s, %d thread(s)" % (label, threads),
            "MXNet Module.forward",
            times["mxnet"],
            "torch (to_torch)",
            times["torch"],
        )
