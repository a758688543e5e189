"""A no-device ``libcuda.so.1`` for a machine without an NVIDIA driver, so that a CUDA wheel
imports and computes on the CPU there (CI machines, a laptop running the same environment).

``libmxnet.so`` of a CUDA wheel names the driver's ``libcuda.so.1`` in ``DT_NEEDED`` and
imports a few ``cu*`` functions from it (``cuDeviceGet``, ``cuModuleLoadData``,
``cuLaunchKernel``…); without it the dynamic linker refuses the whole library.  The stand-in
defines exactly those (read from the library, ``elf.imported_symbols``) and the ones
``driver.py`` asks, each returning ``CUDA_ERROR_NO_DEVICE``: MXNet then counts no GPU, as on a
machine whose driver sees none.  Built with the C compiler by ``mxcompat install`` where the
system has no ``libcuda.so.1``, kept in ``settings.cache_folder("libs")``; the ``cuda_libs``
patch loads it only where the system still has no driver of its own.
"""

import hashlib
import os
import re
import shutil
import subprocess
import tempfile

from .._core import elf, settings
from . import driver

SONAME = "libcuda.so.1"
_DRIVER_FUNCTION = re.compile(r"^cu[A-Z]\w*$")
_ASKED = ("cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetAttribute", "cuDeviceGetName")


def symbols(library):
    """The driver functions ``library`` imports, and those ``driver.py`` asks, sorted."""
    found = set(s for s in elf.imported_symbols(library) if _DRIVER_FUNCTION.match(s))
    return sorted(found | set(_ASKED))


def source(names):
    """The C source of the stand-in: every function returns CUDA_ERROR_NO_DEVICE."""
    lines = ["/* mxcompat's no-device stand-in for the NVIDIA driver's libcuda.so.1. */"]
    lines += ["int %s(void) { return %d; }" % (n, driver.CUDA_ERROR_NO_DEVICE) for n in names]
    return "\n".join(lines) + "\n"


def folder():
    return os.path.join(settings.cache_folder("libs", settings.LIB_CACHE), "no-driver")


def path():
    """Where the stand-in is, or ``None`` where none was built."""
    candidate = os.path.join(folder(), SONAME)
    return candidate if os.path.isfile(candidate) else None


def compiler():
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build(library, cc=None):
    """Build the stand-in for ``library`` (its ``cu*`` imports); returns its path.  ``OSError``
    where no C compiler is found or it fails."""
    cc = cc or compiler()
    if cc is None:
        raise OSError("no C compiler (cc, gcc, clang) to build a no-device %s" % SONAME)
    target = folder()
    os.makedirs(target, exist_ok=True)
    final = os.path.join(target, SONAME)
    # One stand-in for every wheel of this user: it keeps the functions it had (another
    # environment's libmxnet.so may import one this one does not).
    names = set(symbols(library))
    try:
        with open(os.path.join(target, "libcuda.c")) as f:
            names.update(re.findall(r"^int (\w+)\(void\)", f.read(), re.M))
    except OSError:
        pass
    text = source(sorted(names))
    stamp = os.path.join(target, "source.sha256")
    digest = hashlib.sha256(text.encode()).hexdigest()
    if os.path.isfile(final) and os.path.isfile(stamp):
        with open(stamp) as f:
            if f.read().strip() == digest:
                return final
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        c_file = os.path.join(tmp, "libcuda.c")
        with open(c_file, "w") as f:
            f.write(text)
        built = os.path.join(tmp, SONAME)
        command = [cc, "-shared", "-fPIC", "-O1", "-Wl,-soname," + SONAME, "-o", built, c_file]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise OSError("%s failed: %s" % (" ".join(command), done.stdout.decode()[-2000:]))
        os.replace(built, final)
    with open(os.path.join(target, "libcuda.c"), "w") as f:
        f.write(text)
    with open(stamp, "w") as f:
        f.write(digest + "\n")
    return final
