"""MXNet's outputs for a checkpoint's verification computed by another Python (``mxcompat torch
--verify-with PYTHON``), which runs this module as ``python -m mxcompat.torch.mxnet_side
SYMBOL PARAMS FEED OUT``.  It needs MXNet and NumPy there and nothing else (no torch, no
wrapt: mxcompat importable from its folder alone): the arguments' types come with the feed,
and what runs there (``verify.mxnet_outputs``) imports no more (tests/to_torch/
test_verify_with.py runs it in an env without wrapt)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any, Sequence

from .._core.conversion import fail

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np


TYPES = "__types__"  # the feed file's entry of the arguments' types (names, dtype strings)


def outputs_elsewhere(
    python: str,
    symbol_file: str,
    params_file: str,
    feed: dict[str, np.ndarray],
    types: dict[str, Any],
) -> list[tuple[str, np.ndarray]]:
    """[(output name, array)] of MXNet's nodes on ``feed``, computed by ``python``;
    ``types``: {argument: numpy dtype} (``verify.types``)."""
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="mxcompat-verify-") as tmp:
        feed_file, out_file = os.path.join(tmp, "feed.npz"), os.path.join(tmp, "out.npz")
        table = np.array([[n, np.dtype(t).str] for n, t in types.items()]).reshape(-1, 2)
        np.savez(feed_file, **dict(feed, **{TYPES: table}))
        try:
            proc = subprocess.run(
                [python, "-m", __name__, symbol_file, params_file, feed_file, out_file],
                capture_output=True,
                text=True,
                timeout=1800,
            )
        except OSError as exc:
            raise fail("to_torch", "cannot run %s to verify with: %s" % (python, exc)) from None
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise fail(
                "to_torch",
                "verifying with %s failed (it needs MXNet, and mxcompat importable there, e.g. "
                "PYTHONPATH set to the folder mxcompat is installed in): %s" % (python, tail),
            )
        with np.load(out_file) as out:
            names = [str(n) for n in out["names"]]
            return [(n, out["out%d" % i]) for i, n in enumerate(names)]


def main(argv: Sequence[str]) -> int:
    """MXNet's side: SYMBOL PARAMS FEED OUT (this interpreter has MXNet)."""
    import numpy as np

    from .._core.conversion import import_mxnet
    from .verify import mxnet_outputs

    symbol_file, params_file, feed_file, out_file = argv
    mx = import_mxnet()
    symbol = mx.sym.load(symbol_file)
    params = {k.split(":", 1)[-1]: v.asnumpy() for k, v in mx.nd.load(params_file).items()}
    with np.load(feed_file) as f:
        feed = {k: f[k] for k in f.files if k != TYPES}
        types = {str(n): np.dtype(str(t)) for n, t in f[TYPES]}
    pairs = mxnet_outputs(symbol, params, feed, types)
    np.savez(
        out_file,
        names=np.array([n for n, _ in pairs]),
        **{"out%d" % i: a for i, (_, a) in enumerate(pairs)},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
