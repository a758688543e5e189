"""MXNet's CUDA wheels on a GPU they have no code for, or whose architecture their NVRTC cannot
compile for: decided at the first ``mx.gpu(i)`` of each device, before any operator.

The 1.9.1 wheels carry machine code up to sm_86 and no PTX: on Hopper and Blackwell every
operator fails with "no kernel image is available", after the user's data loading.  At the
first ``mx.gpu(i)`` this patch asks the driver for the GPU's compute capability and reads the
architectures of ``libmxnet.so`` (``cuda/``): where none runs on it, one ``RuntimeError`` names
the GPU, its sm, the wheel's list and the ways on (``mx.cpu()``, ``mxcompat.to_torch``); where
NVRTC cannot compile for it (sm_89 before NVRTC 11.8), fusion is turned off with one warning.
Patch name ``gpu_arch``; CUDA builds only.
"""

from .._core.log import step_aside
from .._core.registry import Patch, Target, record, register
from ..cuda import driver, fatbin, guard, libs

PATCH = "gpu_arch"

_checked: set = set()  # device ids that passed


def check_device(index):
    """The guard for GPU ``index`` (``guard.check``): raises ``guard.GPUNotSupported`` where the
    wheel has no code for it; nothing where the driver does not report it (MXNet's own error
    follows at its first use)."""
    try:
        devices, _why = driver.devices()
        device = next((d for d in devices if d.index == index), None)
        if device is None:
            return None
        path = libs.library()
        archs = fatbin.cached(path)
        nvrtc = driver.nvrtc_version([n for n in libs.cuda_needed(path) if "nvrtc" in n])
    except Exception:
        step_aside(
            ("gpu-arch-read", index),
            "mxcompat could not read GPU {index}'s capability or the wheel's architectures "
            "({error}); MXNet runs as it is",
            index=index,
        )
        return None
    verdict = guard.check(device, archs, nvrtc, path)
    if verdict != "runs":
        record(PATCH)
    return verdict


_mxnet_class = None


def mxnet_error(exc):
    """``exc`` as an error that is also MXNet's ``MXNetError``: code that tries a GPU and falls
    back to the CPU on MXNet's error (``except mx.base.MXNetError``) keeps doing so."""
    global _mxnet_class
    if _mxnet_class is None:
        from mxnet.base import MXNetError

        _mxnet_class = type("GPUNotSupported", (guard.GPUNotSupported, MXNetError), {})
        _mxnet_class.__module__ = guard.__name__
    return _mxnet_class(str(exc))


def _gpu(wrapped, instance, args, kwargs):
    context = wrapped(*args, **kwargs)
    index = context.device_id
    if index not in _checked:
        try:
            check_device(index)
        except guard.GPUNotSupported as exc:
            record(PATCH)
            raise mxnet_error(exc) from None
        _checked.add(index)
    return context


register(
    Patch(
        PATCH,
        "CUDA wheels: the first mx.gpu(i) stops with one clear error on a GPU the wheel has no "
        "code for (Hopper, Blackwell), and turns fusion off with one warning where NVRTC cannot "
        "compile for it (sm_89 before NVRTC 11.8).",
        [
            Target("mxnet.context", "gpu", _gpu),
            Target("mxnet", "gpu", _gpu),
        ],
        when=libs.cuda_build,
    )
)
