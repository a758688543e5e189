"""``mxcompat torch --verify-with PYTHON`` where that Python has MXNet and NumPy only: no wrapt,
no torch, mxcompat importable from its folder alone (``PYTHONPATH``), as the guide allows.
The interpreter is the cached MXNet 1.9.1 env of tests/support/checkpoint_writer.py (1.9.1
on Python 3.11 and NumPy 1.23.5, nothing else installed); the checkpoints are the ones it
writes and, as MXNet 0.8 wrote them, the one of test_old_checkpoints.py (which MXNet 1.9.1
upgrades there as mxcompat's reader does here)."""

import os
import subprocess
import sys

import pytest

from tests.support import checkpoint_writer, legacy_checkpoint
from tests.support.repo import ROOT

pytest.importorskip("torch", reason="needs torch (the torch extra)")

CLI = "import sys\nsys.modules['mxnet'] = None\nfrom mxcompat.cli import main\n"
CLI += "sys.exit(main(sys.argv[1:]))"


@pytest.fixture(scope="module")
def mxnet_python():
    python = checkpoint_writer.writer_python("mx191")
    for module in ("wrapt", "torch"):
        proc = subprocess.run([python, "-c", "import " + module], capture_output=True)
        assert proc.returncode != 0, "the verifying env must lack %s" % module
    return python


def _convert(prefix, epoch, shape, python, out):
    env = dict(os.environ, PYTHONPATH=ROOT)  # the checkout alone: mxcompat, not its deps
    args = ["torch", prefix, str(epoch), "-o", out, "--input-shape", shape]
    return subprocess.run(
        [sys.executable, "-c", CLI, *args, "--verify-with", python],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env=env,
    )


def test_checked_by_an_interpreter_without_wrapt(mxnet_python, tmp_path):
    folder = str(tmp_path / "written")
    checkpoint_writer.write(mxnet_python, folder)
    for family in ("transformer", "resnet"):
        shape = ",".join(map(str, checkpoint_writer.FAMILIES[family]))
        prefix = os.path.join(folder, family)
        proc = _convert(prefix, 0, shape, mxnet_python, str(tmp_path / family))
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "not checked" not in proc.stderr


def test_an_old_checkpoint_checked_there(mxnet_python, tmp_path):
    """MXNet 1.9.1 there upgrades the 0.8 file as mxcompat's reader does here: every node
    agrees (without the upgrade, BatchNorm's eps and fix_gamma were lost here)."""
    prefix = str(tmp_path / "legacy")
    legacy_checkpoint.write(prefix, 3)
    shape = ",".join(map(str, legacy_checkpoint.INPUT))
    proc = _convert(prefix, 3, shape, mxnet_python, str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not checked" not in proc.stderr
