"""Section ``import``: ``import mxcompat`` before/after ``import mxnet``, in fresh processes
(probes/import_order.py), with the bytecode cached as a pip install has it (Python >= 3.8),
split into wrapt and mxcompat's own share, and once without any bytecode cache.  The
``operator_cache`` patch's rows: its cache (a folder of the run's) warm, cold (emptied before
each process: a first import) and the patch off, as the fastest of the repetitions (wall and
CPU time); and a DataLoader with 4 workers under forkserver (probes/dataloader_workers.py),
whose fork server imports mxnet anew, with the cache warm and the patch off."""

import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile

_PROBES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probes")
_PROBE = os.path.join(_PROBES, "import_order.py")
_WORKERS = os.path.join(_PROBES, "dataloader_workers.py")


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
    operators = tempfile.mkdtemp(prefix="mxcompat-bench-operators-")
    env, cached = _import_env(cache)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    env["MXCOMPAT_OPERATOR_CACHE"] = operators  # the run's own, not the user's
    env.pop("MXCOMPAT_DISABLE_PATCHES", None)
    off = dict(env, MXCOMPAT_DISABLE_PATCHES="operator_cache")

    def probe(order):
        if order == "cache-cold":
            for name in os.listdir(operators):
                os.unlink(os.path.join(operators, name))
        out = subprocess.check_output(
            [sys.executable, _PROBE, order, empty],
            universal_newlines=True,
            stderr=subprocess.DEVNULL,
            env=off if order == "cache-off" else env,
            timeout=300,
        )
        return [float(v) for v in out.split()]

    def workers(side):
        out = subprocess.check_output(
            [sys.executable, _WORKERS, "forkserver", "4"],
            universal_newlines=True,
            stderr=subprocess.DEVNULL,
            env=off if side == "cache-off" else env,
            timeout=300,
        )
        return float(out.split()[-1])

    try:
        probe("plain")
        plain = True
    except subprocess.CalledProcessError:
        # MXNet imports here only with mxcompat first (1.6+ on NumPy >= 1.24 or Python 3.12+).
        plain = False
        print(
            "import: a plain `import mxnet` fails on this stack; the operator cache's rows "
            "compare with the patch off, the rows with mxnet first are left out",
            flush=True,
        )
    if plain:
        orders = ["plain", "mxcompat-first", "cache-cold", "cache-off", "mxnet-first"]
        orders += ["wrapt-first"] + (["no-bytecode"] if sys.version_info >= (3, 8) else [])
    else:
        orders = ["cache-off", "mxcompat-first", "cache-cold"]
    forkserver = "forkserver" in multiprocessing.get_all_start_methods()
    loaders = dict((side, []) for side in ("cache-off", "cache-warm"))
    try:
        for order in orders:
            probe(order)  # warm-up: fills the bytecode cache
        probe("mxcompat-first")  # and the operator cache, for the warm rows
        runs = dict((order, []) for order in orders)
        for rep in range(reps):
            for order in orders if rep % 2 == 0 else orders[::-1]:
                runs[order].append(probe(order))
        if forkserver:
            for side in loaders:
                workers(side)  # warm-up
            for rep in range(reps):
                for side in sorted(loaders, reverse=rep % 2 == 1):
                    loaders[side].append(workers(side))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)
        shutil.rmtree(operators, ignore_errors=True)

    def col(order, i):
        return [r[i] for r in runs[order]]

    def fastest(order, i):
        return [min(col(order, i))]

    how = "bytecode cached" if cached else "bytecode as installed"
    base, base_name = ("plain", "import mxnet") if plain else ("cache-off", "operator_cache off")
    for clock, at in (("", 0), (", CPU time", 4)):
        table.add(
            "import mxcompat, then mxnet: operator cache warm%s (fastest of %d)" % (clock, reps),
            base_name,
            fastest(base, at),
            "mxcompat + import mxnet",
            fastest("mxcompat-first", at),
            "<= 0.5x",
        )
        table.add(
            "import mxcompat, then mxnet: cache cold, first run%s (fastest of %d)" % (clock, reps),
            base_name,
            fastest(base, at),
            "mxcompat + import mxnet",
            fastest("cache-cold", at),
            "<= 1.05x",
        )
        if plain:  # what the rest of mxcompat costs the import, beside the cold row
            table.add(
                "import mxcompat, then mxnet: operator_cache off%s (fastest of %d)" % (clock, reps),
                base_name,
                fastest(base, at),
                "mxcompat + import mxnet",
                fastest("cache-off", at),
            )
    if forkserver:
        table.add(
            "DataLoader(num_workers=4) under forkserver: first batch (fastest of %d)" % reps,
            "operator_cache off",
            [min(loaders["cache-off"])],
            "operator cache warm",
            [min(loaders["cache-warm"])],
        )
    if not plain:
        return

    import wrapt

    table.add(
        "import mxnet, then mxcompat (fresh processes, %s)" % how,
        "import mxnet",
        col("plain", 0),
        "import mxnet + mxcompat",
        col("mxnet-first", 0),
    )
    table.add(
        "import mxcompat, then mxnet, operator_cache off (%s)" % how,
        "import mxnet",
        col("plain", 0),
        "mxcompat + import mxnet",
        col("cache-off", 0),
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
