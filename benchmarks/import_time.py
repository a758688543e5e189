"""Section ``import``: ``import mxcompat`` before/after ``import mxnet``, in fresh processes
(probes/import_order.py), with the bytecode cached as a pip install has it (Python >= 3.8),
split into wrapt and mxcompat's own share, and once without any bytecode cache."""

import os
import shutil
import subprocess
import sys
import tempfile

_PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probes", "import_order.py")


def _import_env(cache):
    """The probes' environment: bytecode cached in ``cache`` (as a pip install has it), or
    the environment as it is when Python < 3.8 cannot redirect the cache (the probes would
    otherwise write .pyc files into site-packages)."""
    env = dict(os.environ)
    if sys.version_info >= (3, 8):
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
        return env, True
    return env, not env.get("PYTHONDONTWRITEBYTECODE")


def run(table, configs, reps):
    reps = max(3, reps // 2)  # a fresh process per repetition: half as many
    cache = tempfile.mkdtemp(prefix="mxcompat-bench-pyc-")
    empty = tempfile.mkdtemp(prefix="mxcompat-bench-nopyc-")
    env, cached = _import_env(cache)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )

    def probe(order):
        out = subprocess.check_output(
            [sys.executable, _PROBE, order, empty],
            universal_newlines=True,
            stderr=subprocess.DEVNULL,
            env=env,
            timeout=300,
        )
        return [float(v) for v in out.split()]

    orders = ["plain", "mxcompat-first", "mxnet-first", "wrapt-first"]
    if sys.version_info >= (3, 8):
        orders.append("no-bytecode")
    try:
        for order in orders:
            probe(order)  # warm-up: fills the bytecode cache
        runs = dict((order, []) for order in orders)
        for rep in range(reps):
            for order in orders if rep % 2 == 0 else orders[::-1]:
                runs[order].append(probe(order))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)

    def col(order, i):
        return [r[i] for r in runs[order]]

    import wrapt

    how = "bytecode cached" if cached else "bytecode as installed"
    table.add(
        "import mxnet, then mxcompat (fresh processes, %s)" % how,
        "import mxnet",
        col("plain", 0),
        "import mxnet + mxcompat",
        col("mxnet-first", 0),
    )
    table.add(
        "import mxcompat, then mxnet (fresh processes, %s)" % how,
        "import mxnet",
        col("plain", 0),
        "mxcompat + import mxnet",
        col("mxcompat-first", 0),
    )
    table.add(
        "`import mxcompat` before mxnet (alone)",
        "import mxnet",
        col("plain", 0),
        "import mxcompat alone",
        col("mxcompat-first", 3),
        "<= 5 ms",
    )
    table.add(
        "`import mxcompat` after mxnet (patching included)",
        "import mxnet",
        col("plain", 0),
        "import mxcompat alone",
        col("mxnet-first", 2),
        "<= 20 ms",
    )
    table.add(
        "  of which: import wrapt %s" % wrapt.__version__,
        "import mxcompat alone",
        col("mxnet-first", 2),
        "import wrapt alone",
        col("wrapt-first", 1),
    )
    table.add(
        "  of which: mxcompat's own modules + patching",
        "import mxcompat alone",
        col("mxnet-first", 2),
        "mxcompat (wrapt imported)",
        col("wrapt-first", 2),
    )
    if "no-bytecode" in runs:
        table.add(
            "`import mxcompat` after mxnet, no .pyc for wrapt/mxcompat",
            "bytecode cached",
            col("mxnet-first", 2),
            "compiled from source",
            col("no-bytecode", 2),
        )
