"""mxcompat: ``import mxcompat`` and the known traps of legacy MXNet 1.x code are gone.

Importing mxcompat never imports mxnet: the patches land when mxnet is imported (or at once
if it already is).  ``MXCOMPAT_DISABLE=1`` turns every patch off,
``MXCOMPAT_DISABLE_PATCHES=labels,bare_names`` the named ones.
"""
from ._compat import SUPPORTED
from ._log import MXCompatWarning
from ._patching import names as patch_names, patch, patched, unpatch

# Each import registers one patch; the order here is the order patches stack in.
from . import bare_names as _bare_names  # noqa: E402  (registers "bare_names")
from . import labels as _labels  # noqa: E402  (registers "labels")
# Below freeze: its Module.bind sees the registry's names among the fixed ones.
from . import onednn_fc_bias as _onednn_fc_bias  # noqa: E402  (registers "onednn_fc_bias")
from .freeze import (freeze, frozen, frozen_patterns, frozen_report,  # noqa: E402
                     is_frozen, unfreeze)  # (registers "freeze")
from . import frozen_statistics as _frozen_statistics  # noqa: E402  (registers it)
from . import fixed_param_names as _fixed_param_names  # noqa: E402  (registers it)
from .convert import to_gluon, to_module  # noqa: E402  (registers "convert")
from .quantization import quantize  # noqa: E402
from . import distutils_compat as _distutils_compat  # noqa: E402  (registers "distutils")
from . import numpy_compat as _numpy_compat  # noqa: E402  (registers "numpy_names")
from . import numpy2 as _numpy2  # noqa: E402  (registers "numpy2")
from . import ndarray_to_numpy as _ndarray_to_numpy  # noqa: E402  (registers "ndarray_to_numpy")
from . import unbound_get_params as _get_params  # noqa: E402  (registers "unbound_get_params")
from . import int_division as _int_division  # noqa: E402  (registers "int_division")
from .onnx_export import to_onnx  # noqa: E402  (registers "onnx")
from . import trainer_kvstore_init as _trainer_kvstore_init  # noqa: E402  (registers it)
# Last: the -OO tests expect python_oo at the end of the registry.
from . import python_oo as _python_oo  # noqa: E402  (registers "python_oo")
from .legacy_numpy import numpy_legacy  # noqa: E402  (opt-in, not a patch)

__version__ = "0.1.0"

__all__ = [
    "MXCompatWarning",
    "SUPPORTED",
    "freeze",
    "frozen",
    "frozen_patterns",
    "frozen_report",
    "is_frozen",
    "numpy_legacy",
    "patch",
    "patch_names",
    "patched",
    "quantize",
    "to_gluon",
    "to_module",
    "to_onnx",
    "unfreeze",
    "unpatch",
    "__version__",
]

from ._patching import auto_patch as _auto_patch  # noqa: E402

_auto_patch()
