"""What ``mxcompat torch`` writes: ``model.py`` (the generated class, importing
``mxnet_ops.py``, a copy of runtime.py) and the weights, in safetensors."""

import os

from . import runtime
from .convert import import_torch, to_torch

HEADER = '''"""Converted from MXNet by mxcompat (mxcompat torch): one line per MXNet node.

    model = MXNetModel()
    model.load_state_dict(safetensors.torch.load_file("weights.safetensors"))
"""

import torch
import torch.nn.functional as F

try:
    from . import mxnet_ops as mxops
except ImportError:
    import mxnet_ops as mxops

'''


def write_model(model, directory, input_shapes=None):
    """Convert ``model`` (what to_torch takes) and write DIR/model.py, DIR/mxnet_ops.py and
    the weights; ([paths written], a note on the weights' format)."""
    torch = import_torch("mxcompat torch")
    module = to_torch(model, input_shapes, verify=input_shapes is not None)
    os.makedirs(directory, exist_ok=True)
    paths = [os.path.join(directory, n) for n in ("model.py", "mxnet_ops.py")]
    with open(paths[0], "w") as f:
        f.write(HEADER + "\n" + module.code)
    with open(runtime.__file__) as src, open(paths[1], "w") as f:
        f.write(src.read())
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
    return paths + [path], note
