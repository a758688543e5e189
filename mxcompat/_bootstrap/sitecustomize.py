"""Imported at start-up by every Python process that `mxcompat run` starts, and by their
children, because `run` puts this folder on PYTHONPATH (ddtrace-run's way): the patches are in
place before the user's code runs, without editing it.

Every Python that inherits PYTHONPATH reads this file, also one without mxcompat (another
venv, the system Python, pip's build environment), so it must never break start-up, never
run twice, and must always hand over to the user's own sitecustomize exactly once.  Nothing
here reads a docstring (``python -OO`` removes them).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _is_bootstrap(folder):
    # Any mxcompat's bootstrap folder (this one, another venv's, an older release's): each of
    # them only imports mxcompat and hands over, so loading a second one would at best do
    # nothing and at worst bounce between the two forever.
    return (
        os.path.basename(folder) == "_bootstrap"
        and os.path.basename(os.path.dirname(folder)) == "mxcompat"
    )


def _running_sitecustomize_folders():
    # The folders of the sitecustomize modules executing right now: the one that loaded this
    # file if it was loaded by another chaining sitecustomize (ddtrace-style, or an older
    # mxcompat).  Handing over to one of them again would recurse.
    folders = set()
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_globals.get("__file__")
        if (
            path
            and frame.f_code.co_name == "<module>"
            and os.path.splitext(os.path.basename(path))[0] == "sitecustomize"
        ):
            folders.add(os.path.dirname(os.path.abspath(path)))
        frame = frame.f_back
    return folders


def _import_mxcompat():
    try:
        import mxcompat  # noqa: F401  (applies the patches; the environment carries the options)
    except ImportError:
        # This interpreter has no mxcompat (or not its dependencies): it is not one that
        # `mxcompat run` patches, it only inherited PYTHONPATH.  Step aside silently.  Any
        # other error is a bug in mxcompat and is shown, as Python shows it.
        pass


def _hand_over():
    """Run the sitecustomize this file shadows (the user's or the environment's), if any."""
    import importlib.machinery
    import importlib.util

    skip = _running_sitecustomize_folders()
    skip.add(_HERE)
    path = []
    for entry in sys.path:
        folder = os.path.abspath(entry or os.curdir)
        if folder not in skip and not _is_bootstrap(folder):
            path.append(entry)
    ours = sys.modules.pop("sitecustomize", None)
    try:
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is not None and spec.loader is not None:
            theirs = importlib.util.module_from_spec(spec)
            # `import sitecustomize` from now on gives theirs, as without mxcompat.
            sys.modules["sitecustomize"] = theirs
            spec.loader.exec_module(theirs)
    finally:
        if "sitecustomize" not in sys.modules and ours is not None:
            sys.modules["sitecustomize"] = ours


try:
    _import_mxcompat()
finally:
    _hand_over()
