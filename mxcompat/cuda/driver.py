"""The GPUs the NVIDIA driver reports, asked through ``libcuda.so.1`` with ctypes (no MXNet
call): name and compute capability of each.  Asked once per process, at the first GPU context
or by ``mxcompat check``; ``cuInit`` is what MXNet's own first GPU call runs too."""

import ctypes

CUDA_SUCCESS = 0
CUDA_ERROR_NO_DEVICE = 100
# CUdevice_attribute: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR.
_MAJOR, _MINOR = 75, 76

_answer = None


class Device:
    __slots__ = ("index", "name", "capability")

    def __init__(self, index, name, capability):
        self.index = index
        self.name = name
        self.capability = tuple(capability)

    @property
    def sm(self):
        return "sm_%d%d" % self.capability

    def __repr__(self):
        return "Device(%d, %r, %s)" % (self.index, self.name, self.sm)


def _ask():
    """``(devices, why none)``: the devices, or an empty list and the driver's reason."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return [], "no NVIDIA driver (libcuda.so.1 not found)"
    try:
        init, count_of = lib.cuInit, lib.cuDeviceGetCount
        get, attribute, name_of = lib.cuDeviceGet, lib.cuDeviceGetAttribute, lib.cuDeviceGetName
    except AttributeError as exc:
        return [], "libcuda.so.1 is not a driver mxcompat can ask (%s)" % exc
    rc = init(0)
    if rc == CUDA_ERROR_NO_DEVICE:
        return [], "the driver reports no device (CUDA_ERROR_NO_DEVICE)"
    if rc != CUDA_SUCCESS:
        return [], "cuInit failed with CUDA error %d" % rc
    count = ctypes.c_int(0)
    if count_of(ctypes.byref(count)) != CUDA_SUCCESS:
        return [], "cuDeviceGetCount failed"
    devices = []
    for index in range(count.value):
        handle, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
        name = ctypes.create_string_buffer(256)
        if (
            get(ctypes.byref(handle), index) != CUDA_SUCCESS
            or attribute(ctypes.byref(major), _MAJOR, handle) != CUDA_SUCCESS
            or attribute(ctypes.byref(minor), _MINOR, handle) != CUDA_SUCCESS
        ):
            continue
        if name_of(name, len(name), handle) != CUDA_SUCCESS:
            name.value = b"GPU %d" % index
        devices.append(
            Device(index, name.value.decode("utf-8", "replace"), (major.value, minor.value))
        )
    return devices, "" if devices else "the driver reports no device"


def devices():
    """``(list of Device, why the list is empty)``, asked of the driver once per process."""
    global _answer
    if _answer is None:
        _answer = _ask()
    return _answer


def nvrtc_version(sonames):
    """The ``(major, minor)`` of the first NVRTC in ``sonames`` that loads (the one MXNet
    links: ``libnvrtc.so.11.2`` names every 11.2+ release), or ``None``."""
    for soname in sonames:
        try:
            lib = ctypes.CDLL(soname)
        except OSError:
            continue
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0:
            return major.value, minor.value
    return None
