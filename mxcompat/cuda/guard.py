"""What a GPU can do with a CUDA wheel, decided before MXNet's first GPU operator: run, run
with pointwise fusion off, or stop with one clear error.

* Machine code for sm_XY runs on a GPU of the same major X and a minor >= Y (sm_86 code on an
  sm_89 Ada GPU); PTX for compute_XY is compiled by the driver for any GPU >= XY.  A GPU
  neither covers (Hopper sm_90, Blackwell sm_100/sm_120 with the 1.9.1 wheels: machine code up
  to sm_86, no PTX, ``facts.GPU_WHEEL_ARCHS``) would fail at MXNet's first operator with "no
  kernel image is available for execution on the device", after the user's data loading:
  mxcompat says so at the first ``mx.gpu(i)`` instead, with the ways on.
* MXNet's pointwise fusion compiles for the device's own architecture with the NVRTC it loaded;
  an NVRTC that does not know it (``facts.NVRTC_KNOWS_ARCH``: sm_89 before 11.8) fails at the
  first fused graph.  mxcompat sets ``MXNET_USE_FUSION=0`` then, with one warning, unless the
  user set that variable.
"""

import os

from .._core import facts
from .._core.log import warn_once

FUSION = "MXNET_USE_FUSION"


_fusion_ours = False  # MXNET_USE_FUSION=0 is mxcompat's (a user's setting is kept as it is)


class GPUNotSupported(RuntimeError):
    """The installed MXNet has no code for this GPU."""


def runs(capability, archs):
    """Whether a GPU of ``capability`` ((9, 0)) runs code of ``archs`` (a
    ``fatbin.Architectures``): machine code of its major and a minor up to its own, or PTX up to
    its capability."""
    major, minor = capability
    if any(m == major and n <= minor for m, n in archs.sm):
        return True
    return any(p <= tuple(capability) for p in archs.ptx)


def nvrtc_targets(capability, nvrtc):
    """Whether NVRTC ``nvrtc`` ((11, 7)) compiles for ``capability``; ``None`` for an unknown
    NVRTC (no NVRTC loaded: nothing to decide)."""
    if nvrtc is None:
        return None
    capability = tuple(capability)
    if capability < min(facts.NVRTC_KNOWS_ARCH):
        return True
    first = facts.NVRTC_KNOWS_ARCH.get(capability)
    if first is not None:
        return tuple(nvrtc) >= first
    # An architecture after every one NVRTC 11 knows (sm_100, sm_120); a newer NVRTC is not
    # what these wheels link.
    return False if tuple(nvrtc)[0] <= 11 else None


def names(archs):
    return ", ".join(archs.names()) + ("" if archs.ptx else " (no PTX)")


def refusal(device, archs, library):
    """The one error for ``device`` on the wheel whose code is ``archs``."""
    return (
        "GPU %d, %s, is %s, and MXNet's %s has code for %s only: every operator would fail "
        'with "no kernel image is available for execution on the device". No library or '
        "setting can add kernels to this wheel. Ways on: run MXNet on mx.cpu(), or convert the "
        "model to PyTorch (mxcompat.to_torch), which runs on this GPU."
        % (device.index, device.name, device.sm, library, names(archs))
    )


def fusion_warning(device, nvrtc):
    return (
        "GPU %d, %s, is %s, which NVRTC %d.%d cannot compile for: mxcompat set %s=0 (MXNet's "
        "pointwise fusion off; operators run unfused, as on the CPU). NVRTC 11.8 knows %s: pip "
        'install "nvidia-cuda-nvrtc-cu11>=11.8" (with MXCOMPAT_CUDA_LIBS=pip over a system '
        "CUDA), or set %s yourself to decide."
        % (device.index, device.name, device.sm, nvrtc[0], nvrtc[1], FUSION, device.sm, FUSION)
    )


def check(device, archs, nvrtc, library):
    """Before ``device``'s first operator: raise ``GPUNotSupported`` where the wheel has no code
    for it; turn fusion off with one warning where NVRTC cannot target it.  Returns what it
    found: ``"runs"``, ``"runs, fusion off"``."""
    if not runs(device.capability, archs):
        raise GPUNotSupported(refusal(device, archs, library))
    if nvrtc_targets(device.capability, nvrtc) is False:
        global _fusion_ours
        if FUSION in os.environ and not (_fusion_ours and os.environ[FUSION] == "0"):
            return "runs (NVRTC %d.%d cannot compile for it; %s=%s as set)" % (
                nvrtc[0],
                nvrtc[1],
                FUSION,
                os.environ[FUSION],
            )
        os.environ[FUSION] = "0"
        _fusion_ours = True
        warn_once(("gpu-fusion-off", device.index), fusion_warning(device, nvrtc))
        return "runs, fusion off (NVRTC %d.%d cannot compile for it)" % nvrtc
    return "runs"


def describe(device, archs, nvrtc):
    """``mxcompat check``'s word on ``device``, without changing anything."""
    if not runs(device.capability, archs):
        return "GPU %d %s (%s): no code for it in this wheel (mx.cpu() or mxcompat.to_torch)" % (
            device.index,
            device.name,
            device.sm,
        )
    if nvrtc_targets(device.capability, nvrtc) is False:
        return "GPU %d %s (%s): runs, fusion off (NVRTC %d.%d cannot compile for it)" % (
            (device.index, device.name, device.sm) + tuple(nvrtc)
        )
    return "GPU %d %s (%s): runs" % (device.index, device.name, device.sm)
