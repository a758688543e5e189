"""What ``mxcompat torch`` writes: ``model.py`` (the generated class, importing
``mxnet_ops/``, a copy of the runtime package) and the weights, in safetensors; with ``--states``,
the optimizer too: ``mxnet_optim.py`` (a copy of optim_rules.py: MXNet's update rules in
torch) and ``optimizer.pt`` (``mxnet_optim.save``: its state_dict, with every setting, the
update count and the scheduler's position), which ``mxnet_optim.load(model, path)`` resumes
with torch alone."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Mapping

from .._core.conversion import fail
from . import optim_rules, runtime
from .convert import _convert, import_torch

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np
    import torch

    from .convert import Shape, Shapes
    from .tree import Written

HEADER = '''"""Converted from MXNet by mxcompat (mxcompat torch).  To load it:

model = %s()
model.load_state_dict(safetensors.torch.load_file("weights.safetensors"))
"""
'''


def model_source(written: Written) -> str:
    """model.py: the docstring, the imports the classes use, the classes."""
    lines = [HEADER % written.root]

    def uses(name: str) -> bool:
        return re.search(r"(?<![\w.])%s\." % name, written.source) is not None

    if uses("torch"):
        lines.append("import torch")
    if uses("nn"):
        lines.append("from torch import nn")
    if uses("F"):
        lines.append("from torch.nn import functional as F")
    if uses("mxops"):
        lines.append("")
        lines.append("try:")
        lines.append("    from . import mxnet_ops as mxops")
        lines.append("except ImportError:")
        lines.append("    import mxnet_ops as mxops")
    return "\n".join(lines) + "\n\n\n" + written.source


def _trainer_order(model: Any, arrays: Mapping[Any, tuple[np.ndarray, ...]]) -> dict[int, str]:
    """A Trainer's states file from MXNet 1.3 on names no parameter: its index is the
    position in the Trainer's list, sorted by name where a dict was given from 1.7
    (facts.TRAINER_SORTS_PARAMS), else ``collect_params()`` order (the graph's, for a
    sequential network).  The order under which every state has its parameter's shape; none,
    or two that differ: refused.  The checkpoint is read by mxcompat's reader (no MXNet)."""
    from ..formats.checkpoint import Checkpoint

    if not (isinstance(model, tuple) and len(model) == 2):
        return {}
    ckpt = Checkpoint(model[0], model[1], "mxcompat torch")
    shapes = {n: v.shape for n, v in ckpt.params.items()}
    graph = [n["name"] for n in ckpt.graph["nodes"] if n["op"] == "null" and n["name"] in shapes]
    fits: list[dict[int, str]] = []
    for order in (sorted(shapes), graph):
        names = dict(enumerate(order))
        if (
            all(
                i in names and all(a.shape == shapes[names[i]] for a in state)
                for i, state in arrays.items()
            )
            and names not in fits
        ):
            fits.append(names)
    if len(fits) != 1:
        raise fail(
            "mxcompat torch",
            "cannot tell which parameter each state in the states file belongs to (a "
            "Trainer's file names none): convert in Python, with "
            "to_torch_optimizer(trainer, model, batch_size=..., states=...)",
        )
    return fits[0]


def write_optimizer(module: torch.nn.Module, model: Any, states: str, directory: str) -> list[str]:
    """Write DIR/mxnet_optim.py and DIR/optimizer.pt: the optimizer ``states`` resumes, over
    ``module`` converted from ``model``.  The file must hold the optimizer
    (``Trainer.save_states`` always does; a Module's ``save_optimizer_states`` writes the
    states alone, without the settings to rebuild it); it is read by mxcompat's own reader,
    MXNet installed or not."""
    from .optim import _build
    from .optim_state import read_states_file

    arrays, found = read_states_file(states)
    if not found:
        raise fail(
            "mxcompat torch",
            "%s holds the optimizer's states only, not its settings (Module."
            "save_optimizer_states writes them so): convert in Python, with "
            "to_torch_optimizer(module, model, states=...)" % states,
        )
    names = found.get("idx2name") or _trainer_order(model, arrays)
    opt = _build(None, module, None, states, names)
    paths = [os.path.join(directory, n) for n in ("mxnet_optim.py", "optimizer.pt")]
    with open(optim_rules.__file__) as src, open(paths[0], "w") as f:
        f.write(src.read())
    optim_rules.save(opt, paths[1])
    return paths


def write_runtime(directory: str) -> str:
    """DIR/mxnet_ops/: the runtime package's modules, as they are (torch only); its path."""
    here = os.path.dirname(runtime.__file__)
    target = os.path.join(directory, "mxnet_ops")
    os.makedirs(target, exist_ok=True)
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name)) as src:
                text = src.read()
            with open(os.path.join(target, name), "w") as f:
                f.write(text)
    return target + os.sep


def write_model(
    model: Any,
    directory: str,
    input_shapes: Shapes | dict[str, Shape] | Shape | None = None,
    states: str | None = None,
    verify_with: str | None = None,
) -> tuple[list[str], str]:
    """Convert ``model`` (what to_torch takes) and write DIR/model.py, DIR/mxnet_ops/ and
    the weights, and with ``states`` (a states file) the optimizer (``write_optimizer``);
    ([paths written], a note on the weights' format).  ``verify_with``: another Python, whose
    MXNet checks the nodes of a checkpoint's module."""
    torch = import_torch("mxcompat torch")
    module = _convert(model, input_shapes, input_shapes is not None, 1e-4, 1e-5, verify_with)
    written = module.mxnet_written
    os.makedirs(directory, exist_ok=True)
    paths = [os.path.join(directory, "model.py"), write_runtime(directory)]
    with open(paths[0], "w") as f:
        f.write(model_source(written))
    # Each state_dict key's MXNet parameter: what a script that still speaks MXNet's names reads.
    paths.append(os.path.join(directory, "mxnet_names.json"))
    with open(paths[-1], "w") as f:
        json.dump(written.mxnet_names, f, indent=1, sort_keys=True)
        f.write("\n")
    state = {k: v.contiguous() for k, v in module.state_dict().items()}
    try:
        from safetensors.torch import save_file
    except ImportError:
        # torch's own format: it unpickles, which safetensors avoids (pip install safetensors).
        path = os.path.join(directory, "weights.pt")
        torch.save(state, path)
        note = " (weights with torch.save: safetensors is not installed)"
    else:
        path = os.path.join(directory, "weights.safetensors")
        save_file(state, path)
        note = ""
    if states is not None:
        paths += write_optimizer(module, model, states, directory)
    return paths + [path], note
