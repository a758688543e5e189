"""The ``gpu_arch`` patch's decisions for given compute capabilities (8.0, 8.6, 8.9, 9.0, 12.0),
without a GPU: on the architectures of the installed CUDA wheel, read from its libmxnet.so (the
gpu-* env), else on those of the 1.9.1 wheels (``facts.GPU_WHEEL_ARCHS``, read the same way
from mxnet-cu117's libmxnet.so and held against cuobjdump in tests/cuda).  The refusal's text,
the fusion switch and its one warning are the real outcomes; the capability itself comes from
the driver only on a GPU machine."""

import os

import mxnet as mx
import pytest

import mxcompat
from mxcompat._core import facts
from mxcompat.cuda import driver, fatbin, guard, libs
from mxcompat.patches import gpu_arch
from tests.support.stack import CUDA_BUILD

LIBRARY = libs.library()
if CUDA_BUILD:
    ARCHS = fatbin.cached(LIBRARY)
else:
    ARCHS = fatbin.Architectures(facts.GPU_WHEEL_ARCHS["1.9.1"], ())
WHEEL_LIST = "sm_50, sm_60, sm_70, sm_80, sm_86 (no PTX)"


@pytest.fixture
def fusion_env():
    """MXNET_USE_FUSION unset for the test, as it was after."""
    before = os.environ.pop(guard.FUSION, None)
    yield
    os.environ.pop(guard.FUSION, None)
    if before is not None:
        os.environ[guard.FUSION] = before


def test_the_wheel_list_is_the_fact():
    # In the gpu env: the installed wheel's own list, read by fatbin.py, is the recorded one.
    assert ARCHS.sm == facts.GPU_WHEEL_ARCHS["1.9.1"]
    assert guard.names(ARCHS) == WHEEL_LIST


@pytest.mark.parametrize(
    "capability, runs",
    [((8, 0), True), ((8, 6), True), ((8, 9), True), ((9, 0), False), ((12, 0), False)],
)
def test_which_gpus_the_wheel_has_code_for(capability, runs):
    # sm_89 runs sm_86's machine code (same major, lower minor); sm_90 and sm_120 have no
    # machine code of their major and the wheel has no PTX to compile.
    assert guard.runs(capability, ARCHS) is runs


@pytest.mark.parametrize(
    "capability, name", [((9, 0), "NVIDIA H200"), ((12, 0), "NVIDIA RTX PRO 6000 Blackwell")]
)
def test_a_gpu_without_code_is_one_clear_error(capability, name, fusion_env):
    device = driver.Device(1, name, capability)
    with pytest.raises(guard.GPUNotSupported) as raised:
        guard.check(device, ARCHS, (11, 8), "/env/mxnet/libmxnet.so")
    sm = "sm_%d%d" % capability
    assert str(raised.value) == (
        "GPU 1, %s, is %s, and MXNet's /env/mxnet/libmxnet.so has code for %s only: every "
        'operator would fail with "no kernel image is available for execution on the '
        'device". No library or setting can add kernels to this wheel. Ways on: run MXNet on '
        "mx.cpu(), or convert the model to PyTorch (mxcompat.to_torch), which runs on this GPU."
        % (name, sm, WHEEL_LIST)
    )
    assert guard.FUSION not in os.environ


def test_the_refusal_is_also_mxnets_error():
    # Code that tries a GPU and falls back on MXNet's error keeps falling back.
    with pytest.raises(guard.GPUNotSupported):
        guard.check(driver.Device(0, "NVIDIA H200", (9, 0)), ARCHS, (11, 8), LIBRARY)
    error = gpu_arch.mxnet_error(guard.GPUNotSupported("GPU 0, NVIDIA H200, is sm_90"))
    assert isinstance(error, mx.base.MXNetError) and isinstance(error, guard.GPUNotSupported)
    assert str(error) == "GPU 0, NVIDIA H200, is sm_90"
    assert type(error).__module__ + "." + type(error).__name__ == (
        "mxcompat.cuda.guard.GPUNotSupported"
    )


@pytest.mark.parametrize("capability", [(8, 0), (8, 6), (8, 9)])
def test_nvrtc_118_compiles_for_every_gpu_the_wheel_runs_on(capability, fusion_env, recwarn):
    device = driver.Device(0, "GPU", capability)
    assert guard.check(device, ARCHS, (11, 8), LIBRARY) == "runs"
    assert guard.FUSION not in os.environ
    assert [w for w in recwarn if issubclass(w.category, mxcompat.MXCompatWarning)] == []


def test_fusion_off_with_one_warning_on_sm89_before_nvrtc_118(fusion_env):
    device = driver.Device(0, "NVIDIA L4", (8, 9))
    with pytest.warns(mxcompat.MXCompatWarning) as caught:
        verdict = guard.check(device, ARCHS, (11, 7), LIBRARY)
        assert guard.check(device, ARCHS, (11, 7), LIBRARY) == verdict  # warned once
    assert verdict == "runs, fusion off (NVRTC 11.7 cannot compile for it)"
    assert os.environ[guard.FUSION] == "0"
    assert [str(w.message) for w in caught] == [
        "GPU 0, NVIDIA L4, is sm_89, which NVRTC 11.7 cannot compile for: mxcompat set "
        "MXNET_USE_FUSION=0 (MXNet's pointwise fusion off; operators run unfused, as on the "
        'CPU). NVRTC 11.8 knows sm_89: pip install "nvidia-cuda-nvrtc-cu11>=11.8" (with '
        "MXCOMPAT_CUDA_LIBS=pip over a system CUDA), or set MXNET_USE_FUSION yourself to decide."
    ]


@pytest.mark.parametrize(
    "capability, nvrtc, targets",
    [
        ((8, 0), (11, 0), True),
        ((8, 6), (11, 0), False),
        ((8, 6), (11, 1), True),
        ((8, 9), (11, 7), False),
        ((8, 9), (11, 8), True),
        ((9, 0), (11, 8), True),
        ((12, 0), (11, 8), False),
        ((7, 0), (11, 0), True),
    ],
)
def test_what_nvrtc_compiles_for(capability, nvrtc, targets):
    assert guard.nvrtc_targets(capability, nvrtc) is targets


def test_a_fusion_setting_of_the_user_is_kept(fusion_env, recwarn):
    os.environ[guard.FUSION] = "1"
    device = driver.Device(0, "NVIDIA L4", (8, 9))
    verdict = guard.check(device, ARCHS, (11, 7), LIBRARY)
    assert verdict == "runs (NVRTC 11.7 cannot compile for it; MXNET_USE_FUSION=1 as set)"
    assert os.environ[guard.FUSION] == "1"
    assert [w for w in recwarn if issubclass(w.category, mxcompat.MXCompatWarning)] == []


def test_the_check_words():
    archs = ARCHS
    assert guard.describe(driver.Device(0, "NVIDIA H200", (9, 0)), archs, (11, 8)) == (
        "GPU 0 NVIDIA H200 (sm_90): no code for it in this wheel (mx.cpu() or mxcompat.to_torch)"
    )
    assert guard.describe(driver.Device(1, "NVIDIA L4", (8, 9)), archs, (11, 7)) == (
        "GPU 1 NVIDIA L4 (sm_89): runs, fusion off (NVRTC 11.7 cannot compile for it)"
    )
    assert guard.describe(driver.Device(2, "A100", (8, 0)), archs, (11, 8)) == (
        "GPU 2 A100 (sm_80): runs"
    )


@pytest.mark.skipif(not CUDA_BUILD, reason="a CPU build: the patch applies to CUDA builds only")
def test_mx_gpu_is_guarded_and_passes_where_the_driver_reports_no_device():
    assert "gpu_arch" in mxcompat.patched()
    devices, why = driver.devices()
    assert devices == [] and why
    # The stand-in driver sees no GPU: nothing to decide, MXNet's own error comes at first use.
    assert gpu_arch.check_device(0) is None
    assert mx.gpu(0).device_type == "gpu"
    assert mx.context.num_gpus() == 0
