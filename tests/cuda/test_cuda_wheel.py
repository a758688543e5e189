"""An MXNet CUDA wheel (mxnet-cu117 1.9.1, installed by ``mxcompat install`` in the gpu-* env)
on a machine without a GPU, an NVIDIA driver or a system CUDA: its CUDA libraries come from the
nvidia-*-cu11 pip packages, the driver is mxcompat's no-device stand-in, CPU operators compute
what the CPU wheel computes, ``mxcompat check`` lists the wheel's architectures, and the readers
(ELF, fat binary) agree with readelf and cuobjdump on the real libmxnet.so."""

import glob
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from mxcompat._core import elf, facts
from mxcompat.cuda import fatbin, libs, stub
from tests.support import reference_env
from tests.support.processes import mxcompat_cmd, run_python, write
from tests.support.stack import CUDA_BUILD

pytestmark = pytest.mark.skipif(
    not CUDA_BUILD, reason="a CPU build of MXNet: these need an mxnet-cu11X wheel (the gpu-* env)"
)

LIBRARY = libs.library()
PIP_NEEDED = ["libcudnn.so.8", "libnccl.so.2", "libcudart.so.11.0", "libcufft.so.10"]
PIP_NEEDED += ["libcublas.so.11", "libcusolver.so.11", "libcusparse.so.11", "libcurand.so.10"]
PIP_NEEDED += ["libnvrtc.so.11.2", "libnvToolsExt.so.1"]


def _maps():
    with open("/proc/self/maps") as f:
        return set(line.split()[-1] for line in f if "/" in line)


def test_libmxnet_needs_the_cuda_11_libraries_and_the_driver():
    needed = libs.cuda_needed(LIBRARY)
    assert sorted(needed) == sorted(PIP_NEEDED + ["libcuda.so.1"])
    assert libs.requirements(LIBRARY) == [
        "nvidia-cudnn-cu11==8.*",
        "nvidia-nccl-cu11",
        "nvidia-cuda-runtime-cu11",
        "nvidia-cufft-cu11",
        "nvidia-cublas-cu11",
        "nvidia-cusolver-cu11",
        "nvidia-cusparse-cu11",
        "nvidia-curand-cu11",
        "nvidia-cuda-nvrtc-cu11>=11.8,<12",
        "nvidia-nvtx-cu11",
    ]


def test_the_libraries_were_loaded_from_the_pip_packages_and_the_stand_in():
    loaded = _maps()
    for name in PIP_NEEDED:
        path = libs.pip_path(name)
        assert path is not None and os.path.realpath(path) in loaded, name
    assert stub.path() is not None and os.path.realpath(stub.path()) in loaded


def test_without_mxcompat_this_machine_cannot_load_the_wheel():
    # MXCOMPAT_CUDA_LIBS=system: MXNet's own loading, which finds no CUDA 11 here.
    done = run_python("import mxcompat, mxnet", env={"MXCOMPAT_CUDA_LIBS": "system"})
    if done.returncode == 0:
        pytest.skip("this machine has a system CUDA 11 and an NVIDIA driver")
    assert re.search(r"OSError: lib\w+\.so[.\d]*: cannot open shared object file", done.stderr)


def test_a_missing_library_is_one_error_naming_its_package(tmp_path):
    # The same site-packages seen through a folder of links to all of it but nvidia/.
    site = os.path.dirname(os.path.dirname(LIBRARY))
    for name in os.listdir(site):
        if name != "nvidia":
            os.symlink(os.path.join(site, name), str(tmp_path / name))
    done = run_python(
        """
        import os, sys
        import mxcompat
        sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "nvidia"))]
        sys.path.insert(0, %r)
        import mxnet
        """
        % str(tmp_path)
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("mxcompat.cuda.libs.LibraryMissing: MXNet's %s" % tmp_path), last
    for name in PIP_NEEDED:
        package, spec, _folder = libs.PIP_LIBRARIES[name]
        assert "%s (pip package %s)" % (name, package + spec) in last
    assert "libcuda.so.1" not in last  # the stand-in is there
    assert done.stderr.count("LibraryMissing:") == 1  # one error, no chained one


def test_pip_preferred_loads_them_too():
    done = run_python(
        "import mxcompat, mxnet as mx; print((mx.nd.ones((2, 3)) * 2).sum().asscalar())",
        env={"MXCOMPAT_CUDA_LIBS": "pip"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["12.0"]


_OPERATORS = r"""
import sys
import numpy as np
import mxnet as mx

rng = np.random.RandomState(7)
x = mx.nd.array(rng.uniform(-1, 1, (4, 3, 8, 8)))
w = mx.nd.array(rng.uniform(-1, 1, (5, 3, 3, 3)))
b = mx.nd.array(rng.uniform(-1, 1, (5,)))
conv = mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=5, pad=(1, 1))
pooled = mx.nd.Pooling(mx.nd.relu(conv), kernel=(2, 2), stride=(2, 2), pool_type="max")
flat = pooled.reshape((4, -1))
fw = mx.nd.array(rng.uniform(-1, 1, (6, flat.shape[1])))
fc = mx.nd.FullyConnected(flat, fw, num_hidden=6, no_bias=True)
out = {
    "conv": conv, "pooled": pooled, "fc": fc, "softmax": mx.nd.softmax(fc),
    "dot": mx.nd.dot(fw, fw.T), "sum": flat.sum(axis=1), "exp": mx.nd.exp(x[0]),
}
net = mx.gluon.nn.Dense(3, in_units=6)
net.initialize(mx.init.Constant(0.25))
data = mx.nd.array(rng.uniform(-1, 1, (8, 6)))
with mx.autograd.record():
    loss = (net(data) ** 2).sum()
loss.backward()
out["grad"] = net.weight.grad()
np.savez(sys.argv[1], **{k: v.asnumpy() for k, v in out.items()})
"""


def test_cpu_operators_compute_what_the_cpu_wheel_computes(tmp_path):
    try:
        reference = reference_env.reference_venv("1.9.1")
    except reference_env.Unavailable as exc:
        pytest.fail(str(exc))
    script = write(tmp_path / "ops.py", _OPERATORS)
    ours, theirs = str(tmp_path / "cuda.npz"), str(tmp_path / "cpu.npz")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import mxcompat, runpy, sys; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')",
            script,
            ours,
        ],
        check=True,
        env=env,
        timeout=300,
    )
    subprocess.run([reference, script, theirs], check=True, env=env, timeout=300)
    a, b = np.load(ours), np.load(theirs)
    assert sorted(a.files) == sorted(b.files)
    for name in a.files:
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_check_prints_the_architectures_and_no_gpu():
    done = mxcompat_cmd("check", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "code for sm_50, sm_60, sm_70, sm_80, sm_86 (no PTX); NVRTC 11.8; no GPU: the driver "
        "reports no device (CUDA_ERROR_NO_DEVICE)" in done.stdout
    )


def _cuobjdump():
    for folder in sys.path:
        for found in glob.glob(os.path.join(folder or ".", "nvidia", "*", "bin", "cuobjdump")):
            return found
    return shutil.which("cuobjdump")


def test_the_fat_binary_reader_agrees_with_cuobjdump():
    tool = _cuobjdump()
    assert tool is not None, "the gpu env installs nvidia-cuda-cuobjdump"
    elf_list = subprocess.run([tool, "--list-elf", LIBRARY], capture_output=True, text=True)
    ptx_list = subprocess.run([tool, "--list-ptx", LIBRARY], capture_output=True, text=True)
    assert elf_list.returncode == 0, elf_list.stderr
    sm = set(re.findall(r"\.(sm_\d+)\.cubin", elf_list.stdout))
    ptx = set("compute_" + n for n in re.findall(r"\.sm_(\d+)\.ptx", ptx_list.stdout))
    read = fatbin.read(LIBRARY)
    assert read.names() == sorted(sm, key=lambda n: int(n[3:])) + sorted(ptx)
    assert read.names() == ["sm_50", "sm_60", "sm_70", "sm_80", "sm_86"]
    assert read.sm == facts.GPU_WHEEL_ARCHS["1.9.1"]
    assert fatbin.cached(LIBRARY) == read


@pytest.mark.skipif(
    shutil.which("readelf") is None or shutil.which("nm") is None, reason="needs binutils"
)
def test_the_elf_reader_agrees_with_readelf():
    text = subprocess.run(["readelf", "-dW", LIBRARY], capture_output=True, text=True).stdout
    assert elf.dynamic(LIBRARY)["needed"] == re.findall(
        r"\(NEEDED\)\s+Shared library: \[(.+)\]", text
    )
    # nm's "U name@version" (readelf --dyn-syms takes a minute on this library).
    symbols = subprocess.run(
        ["nm", "-D", "--undefined-only", LIBRARY], capture_output=True, text=True
    ).stdout
    undefined = set(re.findall(r"^\s+[Uwv] ([^\s@]+)", symbols, re.M))  # w, v: weak
    assert set(elf.imported_symbols(LIBRARY)) == undefined
