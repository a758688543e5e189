"""``mxcompat torch``: --check lists what a checkpoint needs without torch (runs in every env);
the conversion writes model.py, mxnet_ops/ and safetensors weights that load back (torch
envs)."""

import importlib.util
import os
import subprocess
import sys

import mxnet as mx
import pytest
from mxnet.gluon.model_zoo import vision

_SPEC = importlib.util.find_spec("torch")
needs_torch = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)


def _cli(*args, cwd, block_torch=False):
    code = "import sys\n"
    if block_torch:
        code += "sys.modules['torch'] = None\n"  # an import of torch would fail
    code += "from mxcompat.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run(
        [sys.executable, "-c", code] + list(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _checkpoint(tmp_path):
    net = vision.get_model("mobilenet0.25", classes=10)
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 3, 32, 32)))
    net.export(os.path.join(str(tmp_path), "mb"))
    mx.sym.gammaln(mx.sym.var("data"), name="log_gamma").save(
        os.path.join(str(tmp_path), "bad-symbol.json")
    )


def test_check_lists_the_operators_without_torch(tmp_path):
    _checkpoint(tmp_path)
    good = _cli("torch", "mb", "0", "--check", cwd=str(tmp_path), block_torch=True)
    assert good.returncode == 0, good.stderr
    assert "Convolution" in good.stdout and "every operator is mapped" in good.stdout
    bad = _cli("torch", "bad", "0", "--check", cwd=str(tmp_path), block_torch=True)
    assert bad.returncode == 1
    assert "gammaln" in bad.stdout and "NOT MAPPED" in bad.stdout


@needs_torch
def test_convert_writes_model_ops_and_safetensors_weights(tmp_path):
    _checkpoint(tmp_path)
    out = _cli("torch", "mb", "0", "-o", "out", "--input-shape", "1,3,32,32", cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert sorted(os.listdir(str(tmp_path / "out"))) == [
        "model.py",
        "mxnet_names.json",
        "mxnet_ops",
        "weights.safetensors",
    ]
    # The written module runs with torch and safetensors only (no mxnet, no mxcompat).
    code = (
        "import sys; sys.modules['mxnet'] = None; sys.modules['mxcompat'] = None\n"
        "import torch, safetensors.torch, model\n"
        "m = model.MXNetModel()\n"
        "m.load_state_dict(safetensors.torch.load_file('weights.safetensors'))\n"
        "print(tuple(m.eval()(torch.ones(1, 3, 32, 32)).shape))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=str(tmp_path / "out"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "(1, 10)"
