"""mxcompat's one warning category and its logger."""

import logging
import os
import sys
import threading
import warnings
import weakref

logger = logging.getLogger("mxcompat")
# A library's logger stays silent until the application configures logging; without this
# Python's last-resort handler would print every warning a second time.
logger.addHandler(logging.NullHandler())


class MXCompatWarning(UserWarning):
    """Every warning mxcompat issues has this category (a ``UserWarning``)."""


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # mxcompat/, not _core/
_once_lock = threading.Lock()
_once_keys = set()
# Object -> the keys warned once for it.  Weak: a key naming one model (its parameter names)
# must die with that model, or a process that builds models one after another keeps a key
# per model for good.
_once_per_object = weakref.WeakKeyDictionary()


def _internal_prefixes():
    # Frames in mxcompat, wrapt and mxnet (and the import machinery) are skipped so the
    # warning points at the user's line, not at a wrapper or deep inside MXNet.
    prefixes = [_PACKAGE, "<frozen "]
    for name in ("wrapt", "mxnet"):
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None)
        if path:
            prefixes.append(os.path.dirname(os.path.abspath(path)))
    return tuple(prefixes)


def _user_stacklevel(prefixes):
    # Counted from warn()'s frame, which is stacklevel 1 for its warnings.warn call.
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(prefixes) or os.path.abspath(filename).startswith(prefixes)):
            return level
        frame = frame.f_back
        level += 1
    return 1


def warn(message):
    """Issue one ``MXCompatWarning`` attributed to the user's code.

    Through ``warnings`` only: logging it as well would print it twice under
    ``logging.basicConfig`` (and ``filterwarnings("ignore")`` would silence one of the two);
    ``logging.captureWarnings(True)`` routes warnings to logging, the standard way."""
    logger.debug("warning: %s", message)
    prefixes = _internal_prefixes()
    if sys.version_info >= (3, 12):
        warnings.warn(message, MXCompatWarning, skip_file_prefixes=prefixes)
    else:
        warnings.warn(message, MXCompatWarning, stacklevel=_user_stacklevel(prefixes))


def warn_once(key, message):
    """``warn`` unless a warning with ``key`` was already issued in this process.

    ``message`` may be a callable returning the text: it is then only built when the warning
    is issued (for messages that cost something to compute on a hot path)."""
    with _once_lock:
        if key in _once_keys:
            return False
        _once_keys.add(key)
    warn(message() if callable(message) else message)
    return True


def warn_once_for(obj, key, message):
    """``warn_once`` for one object: once per ``key`` while ``obj`` lives, remembered no
    longer than ``obj`` (which must support weak references)."""
    with _once_lock:
        keys = _once_per_object.get(obj)
        if keys is None:
            keys = _once_per_object[obj] = set()
        if key in keys:
            return False
        keys.add(key)
    warn(message() if callable(message) else message)
    return True


def step_aside(key, message, **values):
    """In an ``except`` block where mxcompat gives up one piece of its work rather than fail the
    user's import or call: the exception being handled is logged at debug level with its
    traceback, and ``message`` is warned once under ``key``.  ``message`` is a ``str.format``
    template of ``values`` and ``error`` (the exception as "Type: text"), which is returned."""
    exc = sys.exc_info()[1]
    error = "%s: %s" % (type(exc).__name__, exc)
    text = message.format(error=error, **values)
    logger.debug("%s", text, exc_info=True)
    warn_once(key, text)
    return error


def forget(key):
    """Let the one-time warning ``key`` be issued again."""
    with _once_lock:
        _once_keys.discard(key)


def reset_once():
    """Forget which one-time warnings were issued (for tests)."""
    with _once_lock:
        _once_keys.clear()
        _once_per_object.clear()
