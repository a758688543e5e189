"""A DataLoader whose workers start from fresh interpreters (run by benchmarks/import_time.py).

    python dataloader_workers.py METHOD WORKERS

Sets multiprocessing's start method to METHOD after ``import mxnet`` (so mxcompat's
``dataloader_start_method`` respects it: forkserver, as on Python 3.14, or spawn), then times
from the DataLoader's creation to its first batch: the worker processes' start, each (spawn)
or the fork server (forkserver, whose preloaded ``__main__`` is this file) importing mxnet
anew.  Prints seconds."""

import multiprocessing
import os
import sys
import time
import warnings

warnings.simplefilter("ignore")
os.environ["MXNET_SUBGRAPH_VERBOSE"] = "0"

import mxcompat  # noqa: E402,F401

# isort: split
import mxnet as mx  # noqa: E402


def main():
    method, workers = sys.argv[1], int(sys.argv[2])
    multiprocessing.set_start_method(method, force=True)
    data = mx.gluon.data.ArrayDataset(mx.nd.arange(64).reshape((16, 4)))
    start = time.perf_counter()
    loader = mx.gluon.data.DataLoader(data, batch_size=4, num_workers=workers)
    batch = next(iter(loader))
    elapsed = time.perf_counter() - start
    assert batch.asnumpy().tolist()[0] == [0.0, 1.0, 2.0, 3.0]
    print(elapsed)
    del loader


if __name__ == "__main__":
    main()
