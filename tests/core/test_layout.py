"""The package's layout keeps its promises: ``patches.ORDER`` is the registry, every patch
lives under its own name, and the wheel carries every subpackage."""
import importlib
import os
import zipfile

import pytest

import mxcompat
from mxcompat import patches
from mxcompat.cli import matrix

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "mxcompat")


def test_order_is_the_registry():
    assert mxcompat.patch_names() == patches.ORDER
    assert len(set(patches.ORDER)) == len(patches.ORDER)


def test_every_patch_lives_under_its_name():
    in_folder = sorted(f[:-3] for f in os.listdir(os.path.join(PACKAGE, "patches"))
                       if f.endswith(".py") and f != "__init__.py")
    assert in_folder == sorted(set(patches.ORDER) - set(patches.HOMES))
    for name in patches.ORDER:
        module = importlib.import_module("mxcompat." + patches.module_of(name))
        assert module.__name__.rsplit(".", 1)[-1] == name
        assert module.PATCH == name


def test_wheel_holds_every_module(tmp_path):
    try:
        uv = matrix.find_uv()
    except matrix.UsageError as e:
        pytest.skip("building the wheel takes uv, which this env lacks (%s)" % e)
    log = str(tmp_path / "build.log")
    built = matrix.Packages(uv, ROOT, None, str(tmp_path), log)
    with zipfile.ZipFile(built.specs[0]) as wheel:
        shipped = set(wheel.namelist())
    sources = set()
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, ROOT).replace(os.sep, "/")
        sources.update(rel + "/" + f for f in files if f.endswith(".py"))
    assert "mxcompat/_core/registry.py" in sources
    assert sorted(sources - shipped) == []
