"""What every part of ``mxcompat matrix`` shares: the outcomes, the cache's format."""

from ..._core import settings

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
# Bump when what goes into a cached environment changes (e.g. the setuptools rule of runner.py).
CACHE_FORMAT = 1
CACHE_ENV = settings.MATRIX_CACHE
