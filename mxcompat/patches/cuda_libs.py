"""MXNet's CUDA wheels (``mxnet-cu11X``) on a host without CUDA 11: the libraries
``libmxnet.so`` needs, from the ``nvidia-*-cu11`` pip packages.

``libmxnet.so`` of a CUDA wheel names ``libcudart.so.11.0``, ``libcublas.so.11``,
``libcudnn.so.8``… in ``DT_NEEDED``; today's images ship CUDA 12/13 and cuDNN 9, so ``import
mxnet`` fails with the dynamic linker's ``OSError`` on the first one missing.  Before MXNet's
code runs, this patch reads that list (``cuda/libs.py``) and loads each library the system
lacks from the pip package that brings it (``mxcompat install mxnet-cu11X==V`` installs
them); a library found nowhere stops the import with one ``ImportError`` naming it and its
package.  A system CUDA 11 keeps priority; ``MXCOMPAT_CUDA_LIBS=pip`` prefers the packages,
``=system`` (or ``MXCOMPAT_DISABLE_PATCHES=cuda_libs``) leaves MXNet's loading as it is.
Patch name ``cuda_libs``; CUDA builds only (``when=cuda_build``).
"""

from .._core.log import logger
from .._core.registry import Patch, record, register
from ..cuda import libs

PATCH = "cuda_libs"


def _before_mxnet(version):
    path = libs.library()
    if path is None:
        return
    loaded = libs.preload(path, libs.mode())
    if loaded:
        logger.debug("CUDA libraries from pip packages: %s", loaded)
        record(PATCH)


register(
    Patch(
        PATCH,
        "CUDA wheels: the CUDA 11 libraries libmxnet.so needs are loaded from the "
        "nvidia-*-cu11 pip packages where the system has none; one error names a missing one.",
        when=libs.cuda_build,
        before_import=_before_mxnet,
    )
)
