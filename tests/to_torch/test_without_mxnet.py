"""``mxcompat torch`` and ``to_torch((prefix, epoch))`` where MXNet cannot be imported: the
checkpoints each release 1.3.1 ... 1.9.1 writes (tests/support/checkpoint_writer.py, in that
release's own env), converted and compared with MXNet's own outputs saved beside them.

The env py311-nomx has torch and no MXNet; in torch-mx191 MXNet is blocked in the converting
process (``sys.modules["mxnet"] = None``), and the same conversion with MXNet must write the
same bytes."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support import checkpoint_writer
from tests.support.repo import ROOT

torch = pytest.importorskip("torch", reason="needs torch (the torch extra)")

RELEASES = ["mx131", "mx141", "mx151", "mx160", "mx170", "mx180", "mx191"]
HAS_MXNET = importlib.util.find_spec("mxnet") is not None

# The CLI in a child where an import of mxnet fails; it also says whether mxnet was imported.
CONVERT = """import sys
sys.modules["mxnet"] = None
from mxcompat.cli import main
status = 0
for i in range(1, len(sys.argv), 2):
    status |= main(["torch", sys.argv[i], "0", "-o", sys.argv[i] + "-torch",
                    "--input-shape", sys.argv[i + 1]])
print("MXNET IMPORTED" if sys.modules.get("mxnet") is not None else "no mxnet")
sys.exit(status)
"""


def _run(code, *args, env=None, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env=env,
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """{release: folder of its checkpoints}, written once per release."""
    folders = {}

    def get(release):
        if release not in folders:
            python = checkpoint_writer.writer_python(release)
            folder = str(tmp_path_factory.mktemp(release))
            checkpoint_writer.write(python, folder)
            folders[release] = folder
        return folders[release]

    return get


def _load(directory):
    """The MXNetModel of DIR/model.py with DIR/weights.safetensors, as a user loads them."""
    from safetensors.torch import load_file

    name = "converted_%d" % abs(hash(directory))
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(directory, "model.py"), submodule_search_locations=[directory]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    model = module.MXNetModel()
    model.load_state_dict(load_file(os.path.join(directory, "weights.safetensors")))
    return model.eval()


@pytest.mark.parametrize("release", RELEASES)
def test_release_checkpoints_convert_without_mxnet(written, release):
    folder = written(release)
    args = []
    for family, shape in checkpoint_writer.FAMILIES.items():
        args += [os.path.join(folder, family), ",".join(map(str, shape))]
    proc = _run(CONVERT, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("no mxnet"), proc.stdout
    # Each conversion says in one line that MXNet did not check it.
    lines = [line for line in proc.stderr.splitlines() if "not checked against MXNet" in line]
    assert len(lines) == len(checkpoint_writer.FAMILIES), proc.stderr
    for family in checkpoint_writer.FAMILIES:
        prefix = os.path.join(folder, family)
        model = _load(prefix + "-torch")
        with np.load(prefix + "-io.npz") as io:
            data, want = io["data"], io["out"]
        with torch.no_grad():
            got = model(torch.from_numpy(data)).numpy()
        assert got.shape == want.shape, family
        worst = float(np.abs(got.astype(np.float64) - want).max())
        assert worst <= 1e-5 * float(np.abs(want).max()), (release, family, worst)


def test_import_and_to_torch_never_import_mxnet(written, tmp_path):
    prefix = os.path.join(written("mx191"), "resnet")
    code = (
        "import sys\n"
        + ('sys.modules["mxnet"] = None\n' if HAS_MXNET else "")
        + "import warnings, mxcompat\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    m = mxcompat.to_torch((sys.argv[1], 0), [(1, 3, 32, 32)])\n"
        "assert sys.modules.get('mxnet') is None\n"
        "print(type(m).__name__, len(w), w[0].message)\n"
    )
    proc = _run(code, prefix)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("MXNetModel 1 mxcompat.to_torch: "), proc.stdout
    assert "not checked against MXNet" in proc.stdout


@pytest.mark.skipif(not HAS_MXNET, reason="needs MXNet beside torch: runs in torch-mx191")
def test_the_same_bytes_with_and_without_mxnet(written, tmp_path):
    folder = written("mx151")
    for family in ("densenet", "lstm_lm"):
        prefix = os.path.join(folder, family)
        shape = ",".join(map(str, checkpoint_writer.FAMILIES[family]))
        outs = [str(tmp_path / (family + "-without")), str(tmp_path / (family + "-with"))]
        code = CONVERT.replace('sys.argv[i] + "-torch"', "sys.argv[i + 2]").replace(
            "range(1, len(sys.argv), 2)", "range(1, len(sys.argv), 3)"
        )
        assert _run(code, prefix, shape, outs[0]).returncode == 0
        with_mx = _run(
            "import sys\nfrom mxcompat.cli import main\nsys.exit(main(sys.argv[1:]))",
            *["torch", prefix, "0", "-o", outs[1], "--input-shape", shape],
        )
        assert with_mx.returncode == 0, with_mx.stderr[-3000:]
        assert "not checked" not in with_mx.stderr  # MXNet checked every node
        ops = ["mxnet_ops/" + n for n in sorted(os.listdir(os.path.join(outs[0], "mxnet_ops")))]
        assert "mxnet_ops/__init__.py" in ops
        for name in ["model.py", "weights.safetensors"] + ops:
            with open(os.path.join(outs[0], name), "rb") as a:
                with open(os.path.join(outs[1], name), "rb") as b:
                    assert a.read() == b.read(), (family, name)


def test_verify_with_another_python(written, tmp_path):
    """--verify-with: the nodes checked by the 1.9.1 env's MXNet (mxcompat importable there
    through PYTHONPATH: the checkout, and wrapt and packaging, its dependencies, from here)."""
    import packaging
    import wrapt

    folder = written("mx191")
    python = checkpoint_writer.writer_python("mx191")
    deps = tmp_path / "deps"
    deps.mkdir()
    for package in (wrapt, packaging):
        os.symlink(os.path.dirname(package.__file__), deps / package.__name__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(deps)]))
    prefix = os.path.join(folder, "transformer")
    cli = "import sys\nsys.modules['mxnet'] = None\nfrom mxcompat.cli import main\n"
    cli += "sys.exit(main(sys.argv[1:]))"
    args = ["torch", prefix, "0", "-o", str(tmp_path / "out"), "--input-shape", "2,6,16"]
    proc = _run(cli, *args, "--verify-with", python, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not checked" not in proc.stderr
    # Without mxcompat importable there (no PYTHONPATH, and not run from the checkout, which
    # `python -m` would put on its path): one error that says what it needs.
    env.pop("PYTHONPATH")
    out = str(tmp_path / "o2")
    proc = _run(cli, *args[:4], out, *args[5:], "--verify-with", python, env=env, cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "mxcompat importable there" in proc.stderr


def test_mismatched_files_get_one_error(written, tmp_path):
    import shutil

    folder = written("mx191")
    # The symbol file of another checkpoint beside these parameters.
    shutil.copy(os.path.join(folder, "resnet-0000.params"), tmp_path / "mixed-0000.params")
    shutil.copy(os.path.join(folder, "mobilenet-symbol.json"), tmp_path / "mixed-symbol.json")
    from mxcompat.formats.checkpoint import Checkpoint

    with pytest.raises(ValueError, match="does not fit the graph") as err:
        Checkpoint(str(tmp_path / "mixed"), 0)
    message = str(err.value)
    assert "arrays the graph does not use: 'resnetv10_conv0_weight'" in message
    assert "parameters it lacks: 'mobilenet0_" in message
    proc = _run(
        "import sys\nsys.modules['mxnet'] = None\nfrom mxcompat.cli import main\n"
        "sys.exit(main(sys.argv[1:]))",
        *["torch", str(tmp_path / "mixed"), "0", "--input-shape", "1,3,32,32"],
    )
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "does not fit the graph" in proc.stderr
