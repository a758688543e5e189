"""Install Horovod 0.28.1 built against this env's MXNet (tox envs hvd-*), from a wheel cache.

Horovod's MXNet extension is compiled against the MXNet and the Python it is built in, so a
wheel is cached per Python tag and MXNet version, under ``HOROVOD_WHEEL_CACHE`` (default:
``~/.cache/mxcompat/horovod``, outside the clone, so the next CI run on this machine reuses
it).  A cache miss builds it (about 3 minutes on two idle cores) as docs/horovod.md tells
users to: ``pip install --no-build-isolation`` with MXNet and gloo, and where MXNet does not
import without mxcompat, through ``mxcompat run``, so that pip's build processes get the
bootstrap.
"""

import glob
import os
import subprocess
import sys
import time
from importlib import metadata

VERSION = "0.28.1"
BUILD_TIMEOUT = 1800  # seconds
BUILD_ENV = {
    "HOROVOD_WITH_MXNET": "1",
    "HOROVOD_WITH_GLOO": "1",
    "HOROVOD_WITHOUT_MPI": "1",
    "HOROVOD_WITHOUT_TENSORFLOW": "1",
    "HOROVOD_WITHOUT_PYTORCH": "1",
}


def main():
    # mxcompat is installed in this env (the wheel may be built through `mxcompat run`).
    from mxcompat._core import settings

    tag = "cp%d%d-mxnet%s" % (sys.version_info[0], sys.version_info[1], metadata.version("mxnet"))
    cache = os.path.join(settings.cache_folder("horovod", "HOROVOD_WHEEL_CACHE"), tag)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    wheels = glob.glob(os.path.join(cache, "horovod-%s-*.whl" % VERSION))
    if not wheels:
        plain = subprocess.run([sys.executable, "-c", "import mxnet"], capture_output=True)
        build = (
            pip if plain.returncode == 0 else [sys.executable, "-m", "mxcompat", "run"] + pip[1:]
        )
        start = time.time()
        subprocess.run(
            build
            + ["wheel", "--no-build-isolation", "--no-deps", "--no-cache-dir", "-w", cache]
            + ["horovod==%s" % VERSION],
            env=dict(os.environ, **BUILD_ENV),
            check=True,
            timeout=BUILD_TIMEOUT,
            stdout=subprocess.DEVNULL,
        )
        print("built Horovod %s for %s in %.0f s" % (VERSION, tag, time.time() - start))
        wheels = glob.glob(os.path.join(cache, "horovod-%s-*.whl" % VERSION))
    else:
        print("Horovod %s for %s from the cache %s" % (VERSION, tag, cache))
    # Its dependencies are the env's deps already (tox.ini), so the install needs no network.
    subprocess.run(pip + ["install", "-q", "--no-deps", "--force-reinstall", wheels[0]], check=True)


if __name__ == "__main__":
    main()
