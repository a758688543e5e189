"""On Python 3.14+ the ``operator_cache`` patch caches nothing: an import there is MXNet's own
(its functions are not yet shown equal to MXNet's one by one on that Python)."""

import os
import subprocess
import sys

import pytest

from tests.support.processes import subprocess_env
from tests.support.repo import ROOT


@pytest.mark.skipif(sys.version_info < (3, 14), reason="the cache is on before Python 3.14")
def test_nothing_is_cached_on_python_314(tmp_path):
    code = (
        "import json, mxcompat, mxnet\n"
        "from mxcompat.patches import operator_cache\n"
        "print(json.dumps(operator_cache.last_import()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=subprocess_env({"MXCOMPAT_OPERATOR_CACHE": str(tmp_path)}),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1] == "{}"
    assert os.listdir(str(tmp_path)) == []
