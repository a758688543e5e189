"""mxcompat's one warning category and its logger."""
import logging
import os
import sys
import threading
import warnings

logger = logging.getLogger("mxcompat")
# A library's logger stays silent until the application configures logging; without this
# Python's last-resort handler would print every warning a second time.
logger.addHandler(logging.NullHandler())


class MXCompatWarning(UserWarning):
    """Every warning mxcompat issues has this category (a ``UserWarning``)."""


_HERE = os.path.dirname(os.path.abspath(__file__))
_once_lock = threading.Lock()
_once_keys = set()


def _internal_prefixes():
    # Frames in mxcompat, wrapt and mxnet are skipped so the warning points at the user's
    # line, not at a wrapper or deep inside MXNet.
    prefixes = [_HERE]
    for name in ("wrapt", "mxnet"):
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None)
        if path:
            prefixes.append(os.path.dirname(os.path.abspath(path)))
    return tuple(prefixes)


def _user_stacklevel():
    # Counted from warn()'s frame, which is stacklevel 1 for its warnings.warn call.
    prefixes = _internal_prefixes()
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(prefixes) and not filename.startswith("<frozen"):
            return level
        frame = frame.f_back
        level += 1
    return 1


def warn(message):
    """Issue one ``MXCompatWarning`` attributed to the user's code, and log it."""
    logger.warning(message)
    warnings.warn(message, MXCompatWarning, stacklevel=_user_stacklevel())


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


def reset_once():
    """Forget which one-time warnings were issued (for tests)."""
    with _once_lock:
        _once_keys.clear()
