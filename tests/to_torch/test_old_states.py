"""Resuming from the states files of Gluon Trainers of MXNet 1.1 and 1.2, without MXNet: their
pickled optimizer carries its parameter dictionary (each Parameter's name, its own lr_mult and
wd_mult, its arrays, its Context) and NumPy's dtype class, and mxcompat's reader reads them
as records, refusing every other class.  The files come from the releases themselves
(tests/support/old_states_writer.py: Python 3.6 envs, cached), which then trained K more
steps; torch, from the file alone (``mxcompat torch --states`` and
``to_torch_optimizer(None, module, states=...)``, with MXNet blocked), must end where they
ended."""

import importlib.util
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from tests.support import old_states_writer
from tests.support.repo import ROOT

torch = pytest.importorskip("torch", reason="needs torch (the torch extra)")

# The releases' float32 kernels against torch's float32 arithmetic, over K steps: measured at
# most 8.3e-8 relative to each parameter's largest value (1.1.0 and 1.2.1 alike); the same
# settings from zero states instead part by 0.14 (Adam) to 0.71 (centered RMSProp).
RTOL = 1e-6

RESUME = """import json, os, sys
sys.modules["mxnet"] = None
import numpy as np, torch, mxcompat
from mxcompat.cli import main
from safetensors.torch import load_file
prefix, out, epoch = sys.argv[1], sys.argv[2], sys.argv[3]
assert main(["torch", prefix, epoch, "-o", out, "--states", prefix + ".states"]) == 0
batches = np.load(prefix + "-after.npz")
def run(model, opt, results, tag):
    model.train()
    for x, y in zip(batches["x"], batches["y"]):
        out, label = model(torch.from_numpy(x)), torch.from_numpy(y).long()
        torch.nn.functional.cross_entropy(out, label, reduction="sum").backward()
        opt.step()
        opt.zero_grad()
    for key, value in model.state_dict().items():
        results[tag + names[key]] = value.numpy()
with open(os.path.join(out, "mxnet_names.json")) as f:
    names = json.load(f)
results = {}
sys.path.insert(0, out)
import model as written, mxnet_optim
net = written.MXNetModel()
net.load_state_dict(load_file(os.path.join(out, "weights.safetensors")))
run(net, mxnet_optim.load(net, os.path.join(out, "optimizer.pt")), results, "cli:")
m = mxcompat.to_torch((prefix, int(epoch)), [(5, 6)])
names = m.mxnet_names
run(m, mxcompat.to_torch_optimizer(None, m, states=prefix + ".states"), results, "api:")
zero = mxcompat.to_torch((prefix, int(epoch)), [(5, 6)])
opt = mxcompat.to_torch_optimizer(None, zero, states=prefix + ".states")
opt.state.clear()  # the same settings from no state: how far that ends
run(zero, opt, results, "zero:")
np.savez(os.path.join(out, "resumed.npz"), **results)
print("MXNET IMPORTED" if sys.modules.get("mxnet") is not None else "no mxnet")
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folders = {}

    def get(release):
        if release not in folders:
            try:
                python = old_states_writer.writer_python(release)
            except RuntimeError as exc:
                pytest.skip("MXNet %s does not install here: %s" % (release, exc))
            folder = str(tmp_path_factory.mktemp("mx" + release.replace(".", "")))
            old_states_writer.write(python, folder)
            folders[release] = folder
        return folders[release]

    return get


@pytest.mark.parametrize("kind", sorted(old_states_writer.OPTIMIZERS))
@pytest.mark.parametrize("release", sorted(old_states_writer.RELEASES))
def test_resumes_without_mxnet(written, release, kind, tmp_path):
    prefix = os.path.join(written(release), kind)
    out = str(tmp_path / "out")
    proc = subprocess.run(
        [sys.executable, "-c", RESUME, prefix, out, str(old_states_writer.N)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("no mxnet"), proc.stdout
    want = np.load(prefix + "-after.npz")
    got = np.load(os.path.join(out, "resumed.npz"))
    names = [n for n in want.files if n not in ("x", "y")]
    assert len(names) == 4
    far = 0.0
    for name in names:
        scale = float(np.abs(want[name]).max())
        for tag in ("cli:", "api:"):
            worst = float(np.abs(got[tag + name] - want[name]).max())
            assert worst <= RTOL * scale, (release, kind, tag, name, worst / scale)
        far = max(far, float(np.abs(got["zero:" + name] - want[name]).max()) / scale)
    assert far > 100 * RTOL, far  # the states carried are what makes it match


def test_the_file_names_each_parameter_and_its_own_multipliers(written):
    from mxcompat.torch.optim_state import read_states_file

    states, found = read_states_file(os.path.join(written("1.2.1"), "sgd.states"))
    assert found["kind"] == "sgd"
    assert sorted(found["idx2name"].values()) == [
        "hybridsequential0_dense0_bias",
        "hybridsequential0_dense0_weight",
        "hybridsequential0_dense1_bias",
        "hybridsequential0_dense1_weight",
    ]
    assert found["param_mults"] == {0: (1.0, 2.0), 1: (1.0, 1.0), 2: (1.0, 1.0), 3: (0.5, 1.0)}
    assert found["lr_scheduler"]["class"] == "FactorScheduler"
    assert [len(s) for _, s in sorted(states.items())] == [1, 1, 1, 1]


def test_numpy_classes_are_read_as_dtypes_never_called(tmp_path):
    from mxcompat.formats.checkpoint import CheckpointError, read_states

    path = str(tmp_path / "dtype.states")
    with open(path, "wb") as f:
        f.write(pickle.dumps(({}, {"dtype": np.float32}), protocol=2))
    # No optimizer record: refused as a states file, but read (the class is the dtype).
    with pytest.raises(CheckpointError, match="the Updater's states"):
        read_states(path)
    # numpy.float32(...) called by the pickle (it would build an array): refused.
    with open(path, "wb") as f:
        f.write(b"\x80\x02cnumpy\nfloat32\nK\x05\x85R.")
    with pytest.raises(CheckpointError) as err:
        read_states(path)
    assert "not callable" in str(err.value)


@pytest.mark.skipif(
    importlib.util.find_spec("mxnet") is None, reason="needs MXNet: the reference reader"
)
def test_mxnet_191_reads_the_same_states(written):
    """MXNet 1.9.1's own Updater reads 1.2.1's file (the reference for the arrays)."""
    import mxnet as mx

    from mxcompat.torch.optim_state import read_states_file

    path = os.path.join(written("1.2.1"), "adam.states")
    ours, found = read_states_file(path)
    updater = mx.optimizer.get_updater(mx.optimizer.create("adam"))
    with open(path, "rb") as f:
        updater.set_states(f.read())
    assert sorted(updater.states) == sorted(ours)
    for index, (mean, var) in updater.states.items():
        np.testing.assert_array_equal(ours[index][0], mean.asnumpy())
        np.testing.assert_array_equal(ours[index][1], var.asnumpy())
    assert found["update_counts"] == updater.optimizer._index_update_count
    assert json.dumps(found["lr_scheduler"], sort_keys=True) == json.dumps(
        dict(vars(updater.optimizer.lr_scheduler), **{"class": "FactorScheduler"}),
        sort_keys=True,
    )
