"""The package's layout keeps its promises: ``registry.ORDER`` is the registry, every patch
lives in ``patches/`` under its own name, and the wheel carries every subpackage."""

import importlib
import os
import zipfile

import pytest

import mxcompat
from mxcompat import _envs
from mxcompat._core import registry
from mxcompat.cli.matrix import runner
from tests.support.processes import run_python
from tests.support.repo import ROOT

PACKAGE = os.path.join(ROOT, "mxcompat")


def test_order_is_the_registry():
    assert mxcompat.patch_names() == registry.ORDER
    assert len(set(registry.ORDER)) == len(registry.ORDER)


def test_every_patch_lives_under_its_name():
    folder = os.path.join(PACKAGE, "patches")
    in_folder = sorted(
        f[:-3] if f.endswith(".py") else f
        for f in os.listdir(folder)
        if (f.endswith(".py") and f != "__init__.py")
        or os.path.isfile(os.path.join(folder, f, "__init__.py"))  # a patch in parts
    )
    assert in_folder == sorted(registry.ORDER)
    for name in registry.ORDER:
        module = importlib.import_module("mxcompat.patches." + name)
        assert module.__name__.rsplit(".", 1)[-1] == name
        assert module.PATCH == name


def test_wheel_holds_every_module(tmp_path):
    uv = _envs.find_uv(required=False)
    if uv is None:
        pytest.skip("building the wheel takes uv, which this env lacks")
    log = str(tmp_path / "build.log")
    built = runner.Packages(uv, ROOT, None, str(tmp_path), log)
    with zipfile.ZipFile(built.specs[0]) as wheel:
        shipped = set(wheel.namelist())
    sources = set()
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, ROOT).replace(os.sep, "/")
        sources.update(rel + "/" + f for f in files if f.endswith(".py"))
    assert "mxcompat/_core/registry.py" in sources
    assert sorted(sources - shipped) == []
    # The checkout's tools/, tests/ and benchmarks/ stay out; beside the package, only the
    # module mxcompat-cuda-libs.pth imports (mxcompat/cuda/plain_import.py).
    tops = sorted({n.split("/")[0] for n in shipped})
    assert tops == [
        "_mxcompat_cuda_libs.py",
        "mxcompat",
        "mxcompat-%s.dist-info" % mxcompat.__version__,
    ]


def _imports_of(path, module):
    """The mxcompat modules ``module`` (at ``path``) imports, at its top or inside a function."""
    import ast

    with open(path) as f:
        tree = ast.parse(f.read())
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("mxcompat"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("mxcompat"):
                continue
            for alias in node.names:
                sub = source + "." + alias.name
                found.add(sub if sub in _MODULES else source)
    return found - {module}


def _modules():
    modules = {}
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                modules[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return modules


_MODULES = _modules()


def _circles(graph):
    """Every import circle of ``graph`` ({module: modules it imports}) a depth-first walk meets."""
    circles, done = [], set()

    def visit(module, path):
        for target in sorted(graph[module]):
            if target in path:
                circles.append(path[path.index(target) :] + [target])
            elif target not in done:
                visit(target, path + [target])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    return circles


def test_no_import_circle():
    graph = dict((m, _imports_of(p, m) & set(_MODULES)) for m, p in _MODULES.items())
    assert graph["mxcompat._core.hooks"] >= {"mxcompat._core.settings"}  # the walk sees imports
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert _circles(graph) == []


def test_core_imports_nothing_above_it():
    # CONTRIBUTING: _core is the machinery every part uses; a part above it (the package's
    # __init__ included) may change, the core may not follow it.
    above = {}
    for module, path in _MODULES.items():
        if module.startswith("mxcompat._core."):
            outside = sorted(
                m for m in _imports_of(path, module) if not m.startswith("mxcompat._core.")
            )
            if outside:
                above[module] = outside
    assert _imports_of(_MODULES["mxcompat._core.versions"], "mxcompat._core.versions")
    assert above == {}


# Modules that are data (one table each) may be longer; code is split by role before this.
# facts.py is the one home of every "changed in MXNet 1.x" fact, by design.
_DATA_TABLES = {"mxcompat._core.traps", "mxcompat._core.facts"}
_MAX_LINES = 450


def test_no_module_over_450_lines():
    long = {}
    for module, path in _MODULES.items():
        with open(path, encoding="utf-8") as f:
            count = sum(1 for _ in f)
        if count > _MAX_LINES and module not in _DATA_TABLES:
            long[module] = count
    assert long == {}


def test_public_functions_stay_callable_when_their_submodule_is_imported():
    # `freeze` and `numpy_legacy` are both a submodule and the function it holds; importing
    # the submodule before mxnet must not leave the package attribute a module.
    proc = run_python(
        """
        import sys
        import mxcompat
        from mxcompat.freeze import report
        from mxcompat.numpy_legacy import enabled
        assert "mxnet" not in sys.modules
        print(mxcompat.freeze.__module__, mxcompat.numpy_legacy.__module__)
        mxcompat.freeze("conv0_*")
        print(mxcompat.frozen_patterns(), enabled())
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "mxcompat.freeze.registry mxcompat.numpy_legacy",
        "('conv0_*',) False",
    ]
