"""What every part of ``mxcompat matrix`` shares: the outcomes, the cache's format, the
error of a run that cannot be made."""

from ..._core import settings
from .. import envs

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
# Bump when what goes into a cached environment changes (e.g. the setuptools rule below).
CACHE_FORMAT = 1
CACHE_ENV = settings.MATRIX_CACHE
MARKER = envs.MARKER
INSTALL_TIMEOUT = envs.INSTALL_TIMEOUT


class UsageError(Exception):
    pass
