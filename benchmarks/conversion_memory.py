"""Section ``memory``: the peak RSS growth of each conversion, one fresh process per
conversion (probes/conversion_peak_rss.py)."""

import json
import os
import subprocess
import sys

from .conversion import conversion_models

_PROBE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "probes", "conversion_peak_rss.py"
)


def _peak_growth(name, size, direction, side):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    # glibc: every allocation of 64 kB or more gets its own mapping, returned when freed.
    # Otherwise its threshold grows with the arrays freed while the model is built, and the
    # conversion reuses that freed (still resident) heap: the peak would read low.
    env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    out = subprocess.check_output(
        [sys.executable, _PROBE, root, name, str(size), direction, side],
        universal_newlines=True,
        stderr=subprocess.DEVNULL,
        env=env,
        timeout=600,
    )
    return json.loads(out.strip().splitlines()[-1])


def run(table, configs, reps):
    for name, _ in conversion_models(configs):
        size = 32  # the input size does not change what a conversion holds
        for direction, base, files, copy, share in (
            (
                "to_gluon",
                "copy every weight once",
                "save_checkpoint+imports",
                "to_gluon(copy=True)",
                "to_gluon(copy=False)",
            ),
            (
                "to_module",
                "copy every weight once",
                "export+Module.load",
                "to_module(copy=True)",
                "to_module(copy=False)",
            ),
        ):
            peak = {
                side: _peak_growth(name, size, direction, side)
                for side in (base, files, copy, share)
            }
            weights = peak[base]["weights_mb"]
            what = "%s %s (weights %.0f MB)" % (direction, name.replace("_v1", ""), weights)
            mb = {side: [p["peak_growth_mb"]] for side, p in peak.items()}
            table.add(
                "Peak RSS growth, %s: copy" % what,
                base,
                mb[base],
                copy,
                mb[copy],
                "~1x (one copy)",
                unit="MB",
            )
            table.add(
                "Peak RSS growth, %s: share" % what,
                files,
                mb[files],
                share,
                mb[share],
                "~0 MB (no copy)",
                unit="MB",
            )
