"""Import times in a fresh process (run by benchmarks/import_time.py).

    python import_order.py ORDER NO_PYC_DIR

ORDER: ``plain`` (mxnet alone), ``mxcompat-first`` (``cache-cold`` and ``cache-off`` the
same, the caller emptying the operator cache or turning the patch off), ``mxnet-first``,
``wrapt-first`` (wrapt between mxnet and mxcompat: wrapt's own share), ``no-bytecode``
(mxcompat after mxnet, its and wrapt's sources compiled, with the bytecode cache redirected to
the empty NO_PYC_DIR).
Prints: the whole, ``import mxnet``, what follows mxnet, what precedes it (seconds), and the
whole's CPU time (the process's, every thread)."""

import os
import sys
import time
import warnings

warnings.simplefilter("ignore")
os.environ["MXNET_SUBGRAPH_VERBOSE"] = "0"
order = sys.argv[1]
c0 = time.process_time()
t0 = time.perf_counter()
if order in ("mxcompat-first", "cache-cold", "cache-off"):
    import mxcompat  # noqa: F401
t1 = time.perf_counter()
import mxnet  # noqa: E402,F401

t2 = time.perf_counter()
if order == "wrapt-first":
    import wrapt  # noqa: F401
t3 = time.perf_counter()
if order == "no-bytecode":
    # As a venv without .pyc files (uv installs without --compile-bytecode) under
    # PYTHONDONTWRITEBYTECODE: wrapt's and mxcompat's sources are compiled at every import.
    # The standard library keeps its bytecode: what wrapt 2 imports of it comes first.
    from importlib import metadata

    if int(metadata.version("wrapt").split(".")[0]) >= 2:
        import asyncio  # noqa: F401
    sys.pycache_prefix = sys.argv[2]
    sys.dont_write_bytecode = True
if order in ("mxnet-first", "wrapt-first", "no-bytecode"):
    import mxcompat  # noqa: F401,F811
t4 = time.perf_counter()
c4 = time.process_time()
print(t4 - t0, t3 - t2, t4 - t3, t1 - t0, c4 - c0)
