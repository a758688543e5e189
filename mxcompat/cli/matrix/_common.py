"""What every part of ``mxcompat matrix`` shares: the outcomes, the cache's format, the
error of a run that cannot be made."""

from ..._core import settings

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
# Bump when what goes into a cached environment changes (e.g. the setuptools rule below).
CACHE_FORMAT = 1
CACHE_ENV = settings.MATRIX_CACHE
MARKER = ".mxcompat-complete"
# Install steps must not hang a CI job on a dead mirror.
INSTALL_TIMEOUT = 1800


class UsageError(Exception):
    pass
