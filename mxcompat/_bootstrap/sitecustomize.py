"""Imported at start-up by every Python process that `mxcompat run` starts, and by their
children, because `run` puts this folder on PYTHONPATH (ddtrace-run's way): the patches are in
place before the user's code runs, without editing it."""
import os
import sys

try:
    import mxcompat  # noqa: F401  (applies the patches; the environment carries the options)
except ImportError:
    # This interpreter has no mxcompat (or not its dependencies): another venv, the system
    # Python or pip's build environment that only inherited PYTHONPATH.  Step aside silently
    # instead of "Error in sitecustomize".  Any other error is a bug in mxcompat, shown as
    # Python shows it.
    pass
finally:
    # This file shadows any sitecustomize the user's environment has: run that one too.
    _here = os.path.dirname(os.path.abspath(__file__))
    _ours = sys.modules.pop("sitecustomize", None)
    try:
        import importlib.machinery
        import importlib.util
        _path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
        _spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _path)
        if _spec is not None and _spec.loader is not None:
            _theirs = importlib.util.module_from_spec(_spec)
            sys.modules["sitecustomize"] = _theirs
            _spec.loader.exec_module(_theirs)
    finally:
        if "sitecustomize" not in sys.modules and _ours is not None:
            sys.modules["sitecustomize"] = _ours
