"""A checkpoint (``PREFIX-symbol.json``, ``PREFIX-EPOCH.params``) converted without MXNet: both
files read by checkpoint.py (whether MXNet is installed or not, so that the module's code and
weights are the same either way), the arrays' names matched against the graph, the module run
once on the input shapes, and every node checked against MXNet where there is one: imported
here when it is importable, or in another interpreter (``verify_with``) that runs this module
as ``python -m mxcompat.torch.from_checkpoint SYMBOL PARAMS FEED OUT`` (MXNet and NumPy there;
torch is not needed)."""

import importlib.util
import json
import linecache
import os
import subprocess
import sys
import tempfile
import traceback

from ..convert._common import _fail, _names, checkpoint_files, missing_checkpoint

WHERE = "to_torch"

# Where an operator reads a parameter (a variable that must have a value in the .params file,
# not an input of the graph): every input position from 1 on, except where noted.
WEIGHT_POSITIONS = {
    "Convolution": None,
    "Deconvolution": None,
    "FullyConnected": None,
    "BatchNorm": None,
    "BatchNorm_v1": None,
    "SyncBatchNorm": None,
    "_contrib_SyncBatchNorm": None,
    "LayerNorm": None,
    "InstanceNorm": None,
    "GroupNorm": None,
    "Embedding": None,
    "LeakyReLU": None,
    "RNN": (1,),  # 2 and 3 are the begin states, which a graph may take as inputs
}
# The auxiliary states' positions (what MXNet's list_auxiliary_states lists).
AUX_POSITIONS = {
    "BatchNorm": (3, 4),
    "BatchNorm_v1": (3, 4),
    "SyncBatchNorm": (3, 4),
    "_contrib_SyncBatchNorm": (3, 4),
}


class Checkpoint:
    """The files of ``(prefix, epoch)``, read: ``graph`` (the normalised symbol JSON), ``text``
    (it as JSON, what codegen reads), ``params`` ({name: numpy array}, parameters and
    auxiliary states) and ``aux`` (the auxiliary states' names)."""

    def __init__(self, prefix, epoch):
        from .checkpoint import read_params, read_symbol

        self.prefix, self.epoch = str(prefix), epoch
        self.symbol_file, self.params_file = checkpoint_files(prefix, epoch)
        missing = missing_checkpoint(self.prefix, epoch)
        if missing:
            raise _fail(WHERE, missing, FileNotFoundError)
        self.graph = read_symbol(self.symbol_file)
        self.text = json.dumps(self.graph, sort_keys=True)
        found = read_params(self.params_file)
        # A Module's or Gluon's checkpoint names each array arg:NAME or aux:NAME; one saved
        # with mx.nd.save of a plain dict does not (then the graph says which are states).
        if found.arg or found.aux:
            self.params = dict(found.arg, **found.aux)
        else:
            self.params = dict(found.arrays)
        nodes = self.graph["nodes"]
        self.aux = set(found.aux) | {
            nodes[e[0]]["name"]
            for node in nodes
            for i, e in enumerate(node["inputs"])
            if i in AUX_POSITIONS.get(node["op"], ()) and nodes[e[0]]["op"] == "null"
        }
        self.check_names()

    def arguments(self):
        """The graph's variables that are not auxiliary states, in node order."""
        return [
            n["name"]
            for n in self.graph["nodes"]
            if n["op"] == "null" and n["name"] not in self.aux
        ]

    def check_names(self):
        """One error naming every array the graph does not use, every parameter it reads that
        the file lacks: a symbol file of another checkpoint, or a mixed-up .params."""
        nodes = self.graph["nodes"]
        variables = {n["name"] for n in nodes if n["op"] == "null"}
        needed = set(self.aux)
        for node in nodes:
            if node["op"] in WEIGHT_POSITIONS:
                positions = WEIGHT_POSITIONS[node["op"]]
                for i, e in enumerate(node["inputs"]):
                    if i and (positions is None or i in positions) and nodes[e[0]]["op"] == "null":
                        needed.add(nodes[e[0]]["name"])
        extra = [n for n in self.params if n not in variables]
        missing = sorted(needed - set(self.params))
        if extra or missing:
            raise _fail(
                WHERE,
                "%s does not fit the graph of %s (a symbol file of another checkpoint?): %s"
                % (
                    self.params_file,
                    self.symbol_file,
                    "; ".join(
                        s
                        for s in (
                            extra and "arrays the graph does not use: %s" % _few(extra),
                            missing and "parameters it lacks: %s" % _few(missing),
                        )
                        if s
                    ),
                ),
            )


def _few(names, most=8):
    shown = _names(names[:most])
    return shown + (" and %d more" % (len(names) - most) if len(names) > most else "")


def mxnet_importable():
    """Whether an ``import mxnet`` would find MXNet (without importing it)."""
    try:
        return importlib.util.find_spec("mxnet") is not None
    except (ImportError, ValueError):
        return False


def types(ckpt):
    """{argument: numpy dtype}, as verify._types has them from MXNet's symbol."""
    import numpy as np

    arguments = ckpt.arguments()
    given = {n: np.dtype(ckpt.params[n].dtype) for n in arguments if n in ckpt.params}
    other = set(given.values()) - {np.dtype(np.float32)}
    default = other.pop() if len(other) == 1 else np.dtype(np.float32)
    return {n: given.get(n, default) for n in arguments}


class _Graph:
    """What verify's feed reads of a symbol, from the checkpoint's JSON."""

    def __init__(self, ckpt):
        self.ckpt = ckpt

    def tojson(self):
        return self.ckpt.text


def run_once(module, written, ckpt, shapes, record):
    """(feed, {node: output}) of one forward of ``module`` on the seeded input of ``shapes``:
    an array of the wrong shape fails here, named by the node whose line fails."""
    import numpy as np

    from . import verify

    feed = verify._feed(_Graph(ckpt), shapes, np.random.RandomState(0), types(ckpt))
    was_training = module.training
    module.eval()
    try:
        return feed, record(module, written, feed)
    except Exception as exc:
        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<mxcompat")
        ]
        line = linecache.getline(frames[-1].filename, frames[-1].lineno).strip() if frames else ""
        raise _fail(
            WHERE,
            "the module converted from %s fails on input_shapes %s%s: %s: %s (the arrays of %s "
            "do not fit its graph, or the shapes do not)"
            % (
                ckpt.prefix,
                list(shapes.values()),
                " at `%s`" % line if line else "",
                type(exc).__name__,
                str(exc).splitlines()[0] if str(exc) else "",
                ckpt.params_file,
            ),
        ) from None
    finally:
        module.train(was_training)


def check(module, written, ckpt, shapes, rtol, atol, record, verify_with=None):
    """Run ``module`` once on ``shapes``, then compare every node with MXNet's: in
    ``verify_with`` (another Python's path) if given, else here when MXNet is importable; else
    say so in one warning."""
    from .._core.log import warn
    from . import verify

    feed, actual = run_once(module, written, ckpt, shapes, record)
    if verify_with is not None:
        expected = _elsewhere(verify_with, ckpt, feed)
    elif mxnet_importable():
        mx = verify._mx()
        symbol = mx.sym.load(ckpt.symbol_file)
        expected = verify._mxnet_internals(symbol, ckpt.params, feed, types(ckpt))
    else:
        warn(
            "mxcompat.to_torch: %s is converted and runs on input_shapes, but is not checked "
            "against MXNet node by node: MXNet is not installed here (mxcompat torch "
            "--verify-with PYTHON checks it with another interpreter's MXNet)" % ckpt.prefix
        )
        return
    verify.compare_nodes(ckpt.text, actual, expected, rtol, atol, written.node_paths)


def _elsewhere(python, ckpt, feed):
    """[(output name, array)] of MXNet's nodes on ``feed``, computed by ``python``."""
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="mxcompat-verify-") as tmp:
        feed_file, out_file = os.path.join(tmp, "feed.npz"), os.path.join(tmp, "out.npz")
        np.savez(feed_file, **feed)
        try:
            proc = subprocess.run(
                [python, "-m", "mxcompat.torch.from_checkpoint"]
                + [ckpt.symbol_file, ckpt.params_file, feed_file, out_file],
                capture_output=True,
                text=True,
                timeout=1800,
            )
        except OSError as exc:
            raise _fail(WHERE, "cannot run %s to verify with: %s" % (python, exc)) from None
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise _fail(
                WHERE,
                "verifying with %s failed (it needs MXNet, and mxcompat importable there, e.g. "
                "PYTHONPATH set to the folder mxcompat is installed in): %s" % (python, tail),
            )
        with np.load(out_file) as out:
            names = [str(n) for n in out["names"]]
            return [(n, out["out%d" % i]) for i, n in enumerate(names)]


def main(argv):
    """MXNet's side of ``verify_with``: SYMBOL PARAMS FEED OUT (this interpreter has MXNet)."""
    import numpy as np

    from . import verify

    symbol_file, params_file, feed_file, out_file = argv
    mx = verify._mx()
    symbol = mx.sym.load(symbol_file)
    params = {k.split(":", 1)[-1]: v.asnumpy() for k, v in mx.nd.load(params_file).items()}
    with np.load(feed_file) as f:
        feed = {k: f[k] for k in f.files}
    pairs = verify._mxnet_internals(symbol, params, feed, verify._types(symbol, params))
    np.savez(
        out_file,
        names=np.array([n for n, _ in pairs]),
        **{"out%d" % i: a for i, (_, a) in enumerate(pairs)},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
