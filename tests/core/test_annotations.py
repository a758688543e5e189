"""The public API is annotated (what a user's type checker reads through py.typed; the tox env
typing checks what it infers), and the annotations cost ``import mxcompat`` nothing."""

import inspect

import pytest

import mxcompat
from mxcompat import cli
from tests.support.processes import run_python

FUNCTIONS = [n for n in mxcompat.__all__ if inspect.isfunction(getattr(mxcompat, n))]
ENTRY_POINTS = [cli.main] + [command.main for command in cli.COMMANDS.values()]


def test_the_public_names_are_the_functions_a_class_and_two_strings():
    assert sorted(set(mxcompat.__all__) - set(FUNCTIONS)) == [
        "MXCompatWarning",
        "SUPPORTED",
        "__version__",
    ]
    assert isinstance(mxcompat.SUPPORTED, str) and isinstance(mxcompat.__version__, str)


@pytest.mark.parametrize(
    "function",
    [getattr(mxcompat, n) for n in FUNCTIONS] + ENTRY_POINTS,
    ids=lambda f: f.__module__ + "." + f.__name__,
)
def test_every_parameter_and_the_return_are_annotated(function):
    signature = inspect.signature(function)  # through contextmanager's __wrapped__ (frozen)
    bare = [p.name for p in signature.parameters.values() if p.annotation is p.empty]
    assert bare == []
    assert signature.return_annotation is not signature.empty
    # Strings (from __future__ import annotations): never evaluated, so Python 3.7 runs them.
    assert all(isinstance(a, str) for a in function.__annotations__.values())


def _type_checkers_view():
    """{public name: (module, attribute)} as a type checker reads mxcompat/__init__.py: the
    imports and assignments of its ``if TYPE_CHECKING:`` block."""
    import ast

    with open(mxcompat.__file__) as f:
        tree = ast.parse(f.read())
    (block,) = [
        n
        for n in tree.body
        if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    ]
    modules, view = {}, {}
    for node in block.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname and alias.asname.startswith("_"):  # a module, for an assignment
                    modules[alias.asname] = "%s.%s" % (node.module, alias.name)
                else:
                    assert alias.asname == alias.name  # `import X as X`: a re-export
                    view[alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Assign):
            (target,) = node.targets
            view[target.id] = (modules[node.value.value.id], node.value.attr)
    return view


def test_type_checkers_read_the_public_table():
    # _PUBLIC is the one list at run time (__all__ is made from it); what a type checker reads
    # must name the same objects, or a user's mypy sees another API than the one that runs.
    assert _type_checkers_view() == mxcompat._PUBLIC
    assert mxcompat.__all__ == list(mxcompat._PUBLIC) + ["__version__"]


def test_import_mxcompat_loads_no_typing_module():
    # Only the pre-import finder (and the one-line module of the version) loads at
    # `import mxcompat`: no typing, no __future__.
    out = run_python(
        "import sys; before = set(sys.modules); import mxcompat; "
        "print(sorted(set(sys.modules) - before))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(
        [
            "mxcompat",
            "mxcompat._core",
            "mxcompat._core.about",
            "mxcompat._core.hooks",
            "mxcompat._core.settings",
        ]
    )
