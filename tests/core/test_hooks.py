"""``_core.hooks``: the one import-hook mechanism (before MXNet's code, after any module's)."""

import ast
import os
import sys

from mxcompat._core import hooks
from tests.support.processes import write
from tests.support.repo import ROOT


def test_a_callback_waits_for_the_module_and_runs_once_after_its_code(tmp_path, monkeypatch):
    write(tmp_path / "mxcompat_hook_probe.py", "VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    hooks.when_imported("mxcompat_hook_probe", lambda m: seen.append(m.VALUE))
    assert seen == []
    try:
        import mxcompat_hook_probe  # noqa: F401

        assert seen == [42]
        # Already imported: a new callback runs at once; the first one does not run again.
        hooks.when_imported("mxcompat_hook_probe", lambda m: seen.append(-m.VALUE))
        assert seen == [42, -42]
        assert mxcompat_hook_probe.__loader__ is mxcompat_hook_probe.__spec__.loader
        assert type(mxcompat_hook_probe.__loader__).__name__ == "SourceFileLoader"
    finally:
        sys.modules.pop("mxcompat_hook_probe", None)


def test_a_failing_callback_warns_once_and_the_import_goes_on(python, tmp_path):
    write(tmp_path / "mxcompat_hook_probe.py", "VALUE = 42\n")
    out = python(
        """
        import sys, warnings
        sys.path.insert(0, %r)
        import mxcompat
        from mxcompat._core import hooks
        def broken(module):
            raise RuntimeError("a bug")
        hooks.when_imported("mxcompat_hook_probe", broken)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import mxcompat_hook_probe
        print(mxcompat_hook_probe.VALUE)
        print([str(w.message) for w in caught if w.category is mxcompat.MXCompatWarning])
        """
        % str(tmp_path)
    ).stdout.splitlines()
    assert out == [
        "42",
        repr(
            [
                "mxcompat could not finish its work after importing mxcompat_hook_probe "
                "(RuntimeError: a bug); mxcompat_hook_probe is imported as it is"
            ]
        ),
    ]


def test_no_wrapt_import_hook_is_left_waiting(python):
    # The registry, python_oo and numpy_legacy all wait through _core.hooks: wrapt's own
    # post-import machinery is never asked for anything.
    out = python(
        """
        import mxcompat
        mxcompat.numpy_legacy()
        import mxnet, wrapt.importer as importer
        print(sorted(k for k, v in importer._post_import_hooks.items() if v))
        print(sum(type(f).__name__ == "ImportHookFinder" for f in __import__("sys").meta_path))
        """
    ).stdout.splitlines()
    assert out == ["[]", "0"]


def test_only_hooks_watches_imports():
    # Static: no module of mxcompat but _core/hooks.py registers an import hook of its own
    # (_core/distutils_fallback.py adds a finder that *serves* distutils, not a hook).
    allowed = {
        "mxcompat/_core/hooks.py": {"meta_path"},
        "mxcompat/_core/distutils_fallback.py": {"meta_path"},
    }
    found = {}
    for folder, dirs, files in os.walk(os.path.join(ROOT, "mxcompat")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
            with open(path, encoding="utf-8") as source:
                tree = ast.parse(source.read())
            names = {
                node.attr
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute)
                and node.attr in ("meta_path", "path_hooks", "register_post_import_hook")
            }
            names |= {
                node.attr
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute)
                and node.attr == "when_imported"
                and getattr(node.value, "id", None) == "wrapt"
            }
            if names - allowed.get(rel, set()):
                found[rel] = sorted(names)
    assert found == {}


def test_a_module_imported_by_mxnets_pre_import_work_still_gets_its_callbacks(python, tmp_path):
    # As the numpy_names action imports NumPy while a user's opt-in waits for it: the
    # re-entrancy guard passes only mxnet itself through unhooked, never what the actions
    # import.
    write(tmp_path / "mxcompat_inner_probe.py", "VALUE = 7\n")
    out = python(
        """
        import sys
        sys.path.insert(0, %r)
        import mxcompat
        from mxcompat._core import hooks
        seen = []
        hooks.when_imported("mxcompat_inner_probe", lambda m: seen.append(m.VALUE))
        hooks.register("probe", lambda version: __import__("mxcompat_inner_probe"))
        import mxnet
        print(seen, "mxcompat_inner_probe" in sys.modules)
        """
        % str(tmp_path)
    ).stdout.splitlines()
    assert out == ["[7] True"]


def test_a_module_loaded_by_a_finder_ahead_of_ours_gets_its_callbacks_at_the_next_hook(
    python, tmp_path
):
    write(tmp_path / "mxcompat_hidden_probe.py", "VALUE = 5\n")
    write(tmp_path / "mxcompat_next_probe.py", "")
    out = python(
        """
        import sys
        from importlib.machinery import PathFinder
        sys.path.insert(0, %r)
        from mxcompat._core import hooks
        seen = []
        hooks.when_imported("mxcompat_hidden_probe", lambda m: seen.append(m.VALUE))
        hooks.when_imported("mxcompat_next_probe", lambda m: seen.append("next"))

        class Ahead:  # a finder put in front of mxcompat's later, answering for itself
            def find_spec(self, name, path=None, target=None):
                if name == "mxcompat_hidden_probe":
                    return PathFinder.find_spec(name, sys.path)
                return None

        sys.meta_path.insert(0, Ahead())
        import mxcompat_hidden_probe
        before = list(seen)
        import mxcompat_next_probe
        print(before, seen)
        """
        % str(tmp_path)
    ).stdout.splitlines()
    assert out == ["[] ['next', 5]"]
