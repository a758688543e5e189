"""What a Gluon script does with multi-worker DataLoaders, as the dataloader tests run it in a
fresh interpreter: ``BODY`` (the script's text) reads each kind of dataset with two workers
and with none, and prints one line per kind (``parse`` reads them back).

The kinds: ``mixed`` (one ``ArrayDataset`` of an NDArray, which MXNet sends to spawned workers
as shared memory, a NumPy array and a plain list), ``lambda`` (a ``transform`` lambda, which
only a forked worker can get), and from 1.4 ``v1`` (``DataLoaderV1``: a ``Process`` per
worker, as 1.3's ``DataLoader``) and ``threads`` (``thread_pool=True``).  ``copies`` is how
many shared-memory copies patch ``dataloader_spawn`` kept alive for a spawning worker;
``kept`` how many it still keeps once every loader is gone; ``start method`` is the default
context's after the first loader (``None``: nothing fixed it).
"""

BODY = """
import gc
import multiprocessing
import sys

import mxnet as mx
import numpy as np
from mxnet.gluon.data import ArrayDataset, DataLoader
from mxnet.gluon.data import dataloader


def kept():
    # Read only if mxcompat is there: the script itself never imports it.
    spawn = sys.modules.get("mxcompat.patches.dataloader_spawn")
    gc.collect()
    return len(spawn._kept) if spawn is not None else 0


def copies():
    registry = sys.modules.get("mxcompat._core.registry")
    return registry.handled().get("dataloader_spawn", 0) if registry is not None else 0


def rows(batch):
    parts = batch if isinstance(batch, (list, tuple)) else [batch]
    return [part.asnumpy().tolist() for part in parts]


def epoch(loader_class, dataset, workers, options):
    before = copies()
    loader = loader_class(dataset, batch_size=5, num_workers=workers, **options)
    got = [rows(batch) for batch in loader]
    return got, copies() - before


x = np.arange(48, dtype="float32").reshape(12, 4)
mixed = ArrayDataset(mx.nd.array(x), x[:, :2] * 10, [float(i) for i in range(12)])
kinds = [
    ("mixed", DataLoader, mixed, {}),
    ("lambda", DataLoader, ArrayDataset(x).transform(lambda a: a * 2 + 1), {}),
]
if hasattr(dataloader, "DataLoaderV1"):
    if KINDS_V1:
        kinds.append(("v1", dataloader.DataLoaderV1, mixed, {}))
    kinds.append(("threads", DataLoader, mixed, {"thread_pool": True}))
for name, loader_class, dataset, options in kinds:
    try:
        got, made = epoch(loader_class, dataset, 2, options)
    except Exception as exc:
        print(name, "error", type(exc).__name__, str(exc).splitlines()[0][:200])
    else:
        same = got == epoch(loader_class, dataset, 0, options)[0]
        print(name, "same" if same else "different", "copies", made)
    if name == "mixed":
        # Before the thread pool, whose ThreadPool fixes the default context (Python's own).
        print("start method", multiprocessing.get_start_method(allow_none=True))
print("kept", kept())
"""


def script(head="", v1=True):
    """The script: ``head`` (imports, a start method), then ``BODY``."""
    return head + "\nKINDS_V1 = %r\n" % v1 + BODY


def parse(stdout):
    """``{kind: the rest of its line}``, with ``kept`` and ``start method``."""
    lines = {}
    for line in stdout.splitlines():
        if line.startswith("start method "):
            lines["start method"] = line[len("start method ") :]
        elif " " in line:
            name, rest = line.split(" ", 1)
            lines[name] = rest
    return lines
