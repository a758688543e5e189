"""MXNet's CUDA wheels on today's GPU hosts: the CUDA 11 libraries ``libmxnet.so`` needs
(``libs.py``: which, from its ELF ``DT_NEEDED`` list, and where pip put them), the GPU
architectures it carries (``fatbin.py``), the GPU the driver reports (``driver.py``, ctypes,
no MXNet call), and what follows from the two (``guard.py``: run, fusion off, or one clear
refusal).  The patches ``cuda_libs`` and ``gpu_arch`` call these before MXNet needs them."""
