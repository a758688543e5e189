"""The CUDA libraries a ``libmxnet.so`` needs, the pip packages that bring them, and their
preloading before MXNet loads it.

Which libraries: the library's own ``DT_NEEDED`` list (``_core/elf.py``), never a list kept
per release.  Where from: a system CUDA 11 (``LD_LIBRARY_PATH``, ``ld.so.cache``, what the
process has loaded already) keeps priority; where the system has none of a library,
``nvidia/<package>/lib`` of every ``sys.path`` folder (the ``nvidia-*-cu11`` packages that
``mxcompat install mxnet-cu11X==V`` installs).  A library loaded by its path under its soname
is the one the dynamic linker gives ``libmxnet.so``'s ``DT_NEEDED`` entry.
``MXCOMPAT_CUDA_LIBS=pip`` prefers the pip packages to a system CUDA, ``=system`` never loads
them (MXNet as it is).
"""

import ctypes
import os
import sys

from .._core import elf, facts, hooks, settings

# soname -> (the pip package that brings it, its requirement, its folder under nvidia/).  A
# table per library, not per release: which of them a wheel needs is its DT_NEEDED list.
PIP_LIBRARIES = {
    "libcudart.so.11.0": ("nvidia-cuda-runtime-cu11", "", "cuda_runtime"),
    "libcublas.so.11": ("nvidia-cublas-cu11", "", "cublas"),
    "libcublasLt.so.11": ("nvidia-cublas-cu11", "", "cublas"),
    # nvidia-cudnn-cu11 9.x brings libcudnn.so.9.
    "libcudnn.so.8": ("nvidia-cudnn-cu11", "==8.*", "cudnn"),
    "libnccl.so.2": ("nvidia-nccl-cu11", "", "nccl"),
    "libcufft.so.10": ("nvidia-cufft-cu11", "", "cufft"),
    "libcurand.so.10": ("nvidia-curand-cu11", "", "curand"),
    "libcusolver.so.11": ("nvidia-cusolver-cu11", "", "cusolver"),
    "libcusparse.so.11": ("nvidia-cusparse-cu11", "", "cusparse"),
    "libnvrtc.so.11.2": (
        "nvidia-cuda-nvrtc-cu11",
        ">=%d.%d,<12" % facts.NVRTC_PIP_MIN,
        "cuda_nvrtc",
    ),
    "libnvToolsExt.so.1": ("nvidia-nvtx-cu11", "", "nvtx"),
}
DRIVER = "libcuda.so.1"  # the NVIDIA driver's: no pip package brings it
# Libraries a pip library loads by name later (NVRTC its builtins at the first compilation):
# loaded with it, from its folder.
_COMPANIONS = {"libnvrtc.so.11.2": ("libnvrtc-builtins.so.",)}

PREFER_PIP, SYSTEM_ONLY = "pip", "system"


def mode():
    """``MXCOMPAT_CUDA_LIBS``: ``"pip"``, ``"system"`` or ``""`` (unset); another value is
    warned about once and read as unset."""
    value = os.environ.get(settings.CUDA_LIBS, "").strip().lower()
    if value in ("", PREFER_PIP, SYSTEM_ONLY):
        return value
    from .._core.log import warn_once

    warn_once(
        ("env-cuda-libs", value),
        "%s=%r is neither pip nor system; mxcompat reads it as unset (the system's CUDA "
        "libraries, else the pip packages')" % (settings.CUDA_LIBS, value),
    )
    return ""


class LibraryMissing(hooks.ImportRefused):
    """``import mxnet`` would fail on a CUDA library no folder has: one error naming it and the
    pip package that brings it, in place of the dynamic linker's."""


def cuda_needed(library):
    """The CUDA libraries (the pip ones and the driver) ``library`` names in ``DT_NEEDED``, in
    its order; empty for a CPU build."""
    return [n for n in elf.dynamic(library)["needed"] if n in PIP_LIBRARIES or n == DRIVER]


def requirements(library):
    """The pip requirements that bring what ``library`` needs, one per package, in order."""
    out = []
    for name in cuda_needed(library):
        if name in PIP_LIBRARIES:
            package, spec, _folder = PIP_LIBRARIES[name]
            if package + spec not in out:
                out.append(package + spec)
    return out


def pip_path(soname, path=None):
    """Where a pip package put ``soname`` (the first ``nvidia/<folder>/lib`` on ``path``,
    default ``sys.path``), or ``None``."""
    folder = PIP_LIBRARIES[soname][2]
    for entry in sys.path if path is None else path:
        candidate = os.path.join(entry or os.getcwd(), "nvidia", folder, "lib", soname)
        if os.path.isfile(candidate):
            return candidate
    return None


def system_has(soname):
    # What the dynamic linker would give libmxnet.so: LD_LIBRARY_PATH, ld.so.cache, the
    # default folders, or a library of that soname the process has loaded already.
    try:
        ctypes.CDLL(soname, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def _load(path, loaded):
    if path in loaded:
        return
    loaded.add(path)
    folder = os.path.dirname(path)
    # Its own DT_NEEDED among the pip libraries first (cuSOLVER needs cuBLAS's folder, which
    # its RUNPATH names too; loading in order makes that not matter).
    for name in elf.dynamic(path)["needed"]:
        if name in PIP_LIBRARIES:
            other = os.path.join(folder, name)
            if not os.path.isfile(other):
                other = pip_path(name)
            if other is not None:
                _load(other, loaded)
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    for prefix in _COMPANIONS.get(os.path.basename(path), ()):
        for name in sorted(os.listdir(folder)):
            if name.startswith(prefix):
                ctypes.CDLL(os.path.join(folder, name), mode=ctypes.RTLD_GLOBAL)


def preload(library, mode=""):
    """Load the CUDA libraries ``library`` needs that the system lacks from the pip packages
    (``mode``: ``""`` system first, ``"pip"`` the pip packages first, ``"system"`` nothing).
    Returns ``{soname: path loaded from pip}``; raises ``LibraryMissing`` naming every library
    found nowhere, with its pip package."""
    if mode == SYSTEM_ONLY:
        return {}
    beside = os.path.dirname(os.path.abspath(library))
    done, loaded, missing = {}, set(), []
    for name in cuda_needed(library):
        if os.path.isfile(os.path.join(beside, name)):
            continue  # libmxnet.so's RPATH ($ORIGIN) finds it there
        found = pip_path(name) if name in PIP_LIBRARIES else _stand_in(name)
        if found is not None and mode == PREFER_PIP:
            _load(found, loaded)
            done[name] = found
        elif system_has(name):
            continue
        elif found is not None:
            _load(found, loaded)
            done[name] = found
        else:
            missing.append(name)
    if missing:
        raise LibraryMissing(missing_message(library, missing))
    return done


def _stand_in(name):
    # No driver: the no-device libcuda.so.1 `mxcompat install` built, if it did (stub.py).
    from . import stub

    return stub.path() if name == DRIVER else None


def missing_message(library, missing):
    """The one error for the libraries ``missing``, each with what brings it."""
    lines = []
    packages = []
    for name in missing:
        if name == DRIVER:
            lines.append(
                "%s (the NVIDIA driver's library: no pip package brings it; on a machine "
                "without an NVIDIA driver, mxcompat install mxnet-cu11X==VERSION builds a "
                "no-device stand-in where a C compiler is, or install the CPU wheel mxnet)" % name
            )
        else:
            package, spec, _folder = PIP_LIBRARIES[name]
            lines.append("%s (pip package %s)" % (name, package + spec))
            packages.append('"%s"' % (package + spec) if spec else package)
    text = "MXNet's %s needs CUDA libraries this machine does not have: %s." % (
        library,
        "; ".join(lines),
    )
    if packages:
        text += " Install them: pip install %s (mxcompat install mxnet-cu11X==VERSION does)." % (
            " ".join(packages)
        )
    return text + " Set %s=system to let MXNet try its own loading." % settings.CUDA_LIBS


def library():
    """The ``libmxnet.so`` this process loads or will load: the loaded one, else
    ``$MXNET_LIBRARY_PATH``, else the one in the ``mxnet`` package on ``sys.path``; ``None``."""
    base = sys.modules.get("mxnet.base")
    loaded = getattr(getattr(base, "_LIB", None), "_name", None)
    if loaded:
        return loaded
    chosen = os.environ.get("MXNET_LIBRARY_PATH")
    if chosen and os.path.isfile(chosen):
        return chosen
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("mxnet")
    for folder in getattr(spec, "submodule_search_locations", None) or ():
        candidate = os.path.join(folder, "libmxnet.so")
        if os.path.isfile(candidate):
            return candidate
    return None


_builds: dict = {}


def cuda_build(path=None):
    """Whether ``libmxnet.so`` (``library()``) links CUDA: a ``DT_NEEDED`` read, cached per
    file."""
    path = path or library()
    if path is None:
        return False
    try:
        st = os.stat(path)
        key = (path, st.st_size, st.st_mtime_ns)
        if key not in _builds:
            _builds[key] = bool(cuda_needed(path))
        return _builds[key]
    except (OSError, ValueError):
        return False
