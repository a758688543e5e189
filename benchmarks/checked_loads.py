"""Section ``loads``: ``mx.nd.load`` of a large ``.params`` with the ``checked_loads`` patch
removed vs applied (its structure check reads each array's header and seeks past the data),
and the check alone beside the load.  The file is in the page cache for both sides."""

import os
import shutil
import tempfile

import mxnet as mx
import numpy as np

import mxcompat
from mxcompat.formats import structure

from ._harness import interleave

ARRAY_MB = 2  # a ResNet-sized layer: many arrays, each a few MB


def _state(side):
    if side == "unchecked":
        mxcompat.unpatch("checked_loads")
    else:
        mxcompat.patch("checked_loads")


def _params(path, megabytes):
    rng = np.random.RandomState(0)
    count = megabytes // ARRAY_MB
    arrays = {
        "arg:layer%d_weight" % i: mx.nd.array(
            rng.standard_normal(ARRAY_MB * 2**18).astype("f4").reshape(-1, 256)
        )
        for i in range(count)
    }
    mx.nd.save(path, arrays)
    return count


def run(table, configs, reps, quick=False):
    sizes = [20] if quick else [100, 500]
    reps = min(reps, 5) if quick else min(reps, 10)
    folder = tempfile.mkdtemp(prefix="mxcompat-bench-loads-")
    try:
        for megabytes in sizes:
            path = os.path.join(folder, "big.params")
            count = _params(path, megabytes)

            def load():
                loaded = mx.nd.load(path)
                mx.nd.waitall()
                del loaded

            times = interleave({"unchecked": load, "checked": load}, reps, setup=_state)
            _state("checked")
            label = "nd.load of a %d MB .params (%d arrays)" % (megabytes, count)
            table.add(
                label,
                "nd.load",
                times["unchecked"],
                "check + nd.load",
                times["checked"],
                "<= 1.05x",
            )
            check = interleave(
                {"load": load, "check": lambda: structure.check_ndarray_file(path)}, reps
            )
            table.add(
                "  the check alone beside nd.load",
                "nd.load",
                check["load"],
                "structure check",
                check["check"],
                "<= 0.05x",
            )
            os.remove(path)
    finally:
        _state("checked")
        shutil.rmtree(folder, ignore_errors=True)
