"""Section ``startup``: what ``mxcompat-cuda-libs.pth`` (written by ``mxcompat install
mxnet-cu11X==V``, mxcompat/cuda/plain_import.py) costs an interpreter of that environment that
never imports mxnet.

A venv made for the run from this interpreter (``python -m venv --without-pip``), with
``_mxcompat_cuda_libs.py`` and the ``mxcompat`` package linked into its site-packages as the
wheel puts them there; the only difference between the sides is the ``.pth``, written into
site-packages or removed between runs.  Fresh processes, interleaved, the bytecode cached as a
pip install has it.  Each run's CPU time (user + system, from the kernel's accounting of the
waited-for child: a busy machine delays a process more than it makes it work) and, beside it,
its wall time.  Two programs: ``pass``, and one importing standard modules (every import asks
the ``.pth``'s finder first); and, for ``pass``, mxcompat's ``.pth`` beside one whose line is
``import sys``: what any ``.pth`` with an import line costs is not mxcompat's doing."""

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import _mxcompat_cuda_libs
from mxcompat.cuda import plain_import

from ._harness import interleave
from .import_time import _import_env

NAME = plain_import.NAME

# Modules an ordinary program imports: 192 imports with what they import themselves (Python
# 3.13), each of which asks the .pth's finder first.
_IMPORTS = (
    "import argparse, asyncio, csv, dataclasses, decimal, email.message, http.client, json, "
    "logging, pathlib, subprocess, tempfile, typing, unittest, urllib.request, uuid, zipfile"
)


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _venv(root):
    venv = os.path.join(root, "venv")
    subprocess.check_call([sys.executable, "-m", "venv", "--without-pip", venv])
    python = os.path.join(venv, "bin", "python")
    site = subprocess.check_output(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        universal_newlines=True,
    ).strip()
    module = os.path.abspath(_mxcompat_cuda_libs.__file__)
    os.symlink(module, os.path.join(site, os.path.basename(module)))
    os.symlink(os.path.join(os.path.dirname(module), "mxcompat"), os.path.join(site, "mxcompat"))
    return python, site


def run(table, configs, reps):
    n = max(40, reps * 4)
    root = tempfile.mkdtemp(prefix="mxcompat-bench-startup-")
    try:
        python, site = _venv(root)
        pth = os.path.join(site, plain_import.NAME)
        env, _cached = _import_env(os.path.join(root, "pyc"))
        env.pop("PYTHONPATH", None)
        # The sides: no .pth; a .pth whose one line is `import sys` (what any .pth with an
        # import line costs: Python 3.13's site reads .pth files with the utf-8-sig codec,
        # imported for the first one); mxcompat's.
        texts = {"none": None, "bare": "import sys\n", "ours": plain_import.TEXT}

        def place(side):
            if texts[side] is None:
                if os.path.exists(pth):
                    os.remove(pth)
            else:
                with open(pth, "w") as f:
                    f.write(texts[side])

        # Only mxcompat's side runs the hook, checked before anything is timed.
        probe = "import sys; print(any(hasattr(f, '_mxcompat_cuda_libs') for f in sys.meta_path))"
        for side in texts:
            place(side)
            out = subprocess.check_output([python, "-c", probe], env=env, universal_newlines=True)
            assert out.strip() == str(side == "ours"), (side, out)

        programs = (("`python -c pass`", "pass"), ("importing 17 stdlib packages", _IMPORTS))
        for label, code in programs:
            wall = {side: [] for side in texts}

            def start(side, code=code, wall=wall):
                def run_one():
                    t0 = time.perf_counter()
                    subprocess.run([python, "-c", code], env=env, check=True)
                    wall[side].append(time.perf_counter() - t0)

                return run_one

            sides = {side: start(side) for side in texts}
            cpu = interleave(sides, n, warmup=3, setup=place, clock=_children_cpu)
            for side in wall:
                del wall[side][:3]  # the warm-up runs
            title = "interpreter start, %s" % label
            table.add(title + ": CPU", "no .pth", cpu["none"], NAME, cpu["ours"], "<= +1 ms")
            table.add(title + ": wall", "no .pth", wall["none"], NAME, wall["ours"])
            if code == "pass":
                table.add(
                    "  of which: beyond any .pth with an import line (CPU)",
                    "a .pth of `import sys`",
                    cpu["bare"],
                    NAME,
                    cpu["ours"],
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
