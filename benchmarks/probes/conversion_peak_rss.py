"""The peak RSS growth of one conversion, in a process of its own so that nothing an earlier
measurement allocated is counted (run by benchmarks/conversion_memory.py).

    python conversion_peak_rss.py ROOT MODEL SIZE DIRECTION SIDE

ROOT is the repository (for ``benchmarks``), DIRECTION ``to_gluon`` or ``to_module``, SIDE a
key of ``benchmarks.conversion.conversion_sides``.  Prints one JSON line."""

import gc
import json
import os
import resource
import sys
import tempfile
import warnings


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0  # kB -> MB
    return None


def main(root, name, size, direction, side):
    warnings.simplefilter("ignore")
    os.environ["MXNET_SUBGRAPH_VERBOSE"] = "0"
    sys.path.insert(0, root)
    import mxnet as mx

    from benchmarks.conversion import conversion_sides
    from benchmarks.models import gluon_net, inference_module

    workdir = tempfile.mkdtemp()
    net = gluon_net(name, int(size))
    mod = inference_module(net, workdir)
    convert = conversion_sides(net, mod, workdir)[direction == "to_module"][side]
    gc.collect()
    mx.nd.waitall()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        before, how = status("VmRSS"), "VmHWM"
    except OSError:
        before, how = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, "ru_maxrss"
    result = convert()  # noqa: F841  (held until the peak is read)
    mx.nd.waitall()
    after = (
        status("VmHWM")
        if how == "VmHWM"
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    )
    weights = sum(p.data().size * 4 for p in net.collect_params().values()) / 2.0**20
    print(json.dumps({"peak_growth_mb": after - before, "weights_mb": weights, "how": how}))


if __name__ == "__main__":
    main(*sys.argv[1:6])
