"""``mxcompat check``'s GPU line: the CUDA wheel's architectures (read from its
``.nv_fatbin``) and NVRTC, and each GPU the driver reports with "runs" or why not."""

from ...cuda import driver, fatbin, guard, libs
from .runner import Skip, check


@check("gpu", "CUDA build: the wheel's GPU architectures and NVRTC; each GPU runs or why not")
def _check_gpu(mx, tmp):
    path = libs.library()
    if path is None or not libs.cuda_build(path):
        raise Skip("a CPU build of MXNet: no GPU code")
    archs = fatbin.cached(path)
    nvrtc = driver.nvrtc_version([n for n in libs.cuda_needed(path) if "nvrtc" in n])
    line = "code for %s; NVRTC %s" % (
        guard.names(archs),
        "%d.%d" % nvrtc if nvrtc else "not loaded",
    )
    devices, why = driver.devices()
    if not devices:
        return line + "; no GPU: " + why
    words = [guard.describe(d, archs, nvrtc) for d in devices]
    text = line + "; " + "; ".join(words)
    if any(not guard.runs(d.capability, archs) for d in devices):
        raise AssertionError(text)
    return text
