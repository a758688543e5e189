"""One side of the ``longrun`` section's training runs (benchmarks/long_run.py), in a process
of its own so that its RSS is its side's alone.

    python long_run_worker.py ROOT SIDE KIND BLOCK STAGE

SIDE ``patched`` or ``unpatched`` (``mxcompat.unpatch()``), KIND ``module`` (forward_backward +
``Module.update()`` + waitall) or ``trainer`` (autograd forward/backward + ``Trainer.step()``
+ waitall).  Builds the model, prints ``ready``, then for each number N read from stdin runs
block N: BLOCK steps, from step N * BLOCK on; a block that starts a stage of STAGE steps sets
the registry first (even stages: the patterns frozen, odd: unfrozen).  Prints one JSON line
per block: its wall and CPU seconds and the RSS after it.  The parent alternates two such
processes block by block; the one not running waits on its stdin.
"""

import json
import os
import sys
import time
import warnings


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def main(root, side, kind, block, stage):
    warnings.simplefilter("ignore")
    os.environ["MXNET_SUBGRAPH_VERBOSE"] = "0"
    sys.path.insert(0, root)
    import mxnet as mx

    import mxcompat
    from benchmarks.long_run import module_model, trainer_model

    if side == "unpatched":
        mxcompat.unpatch()
    step, patterns = (module_model if kind == "module" else trainer_model)()
    step()
    mx.nd.waitall()
    print("ready", flush=True)
    for line in sys.stdin:
        first = int(line) * block
        if first % stage == 0:
            if (first // stage) % 2 == 0:
                mxcompat.freeze(*patterns)
            else:
                mxcompat.unfreeze(*patterns)
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(block):
            step()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(
            json.dumps(
                {
                    "first": first,
                    "frozen": (first // stage) % 2 == 0,
                    "seconds": wall,
                    "cpu": cpu,
                    "rss_mb": rss_mb(),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
