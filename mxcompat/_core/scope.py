"""A change that holds while any thread needs it (an environment variable, a module's
attribute), made and undone once however the threads overlap."""

import threading


class SharedScope:
    """``with scope:`` for a change that must hold while any thread is inside: the first to
    enter calls ``install()``, which makes the change and returns how to undo it, and the
    last to leave undoes it.  Counted under a lock: each thread saving and restoring what it
    saw could leave the change in place for good when two overlap out of order."""

    def __init__(self, install):
        self._install = install
        self._lock = threading.Lock()
        self._users = 0
        self._undo = None

    def __enter__(self):
        with self._lock:
            if self._users == 0:
                self._undo = self._install()
            self._users += 1
        return self

    def __exit__(self, *exc_info):
        with self._lock:
            self._users -= 1
            if self._users == 0:
                undo, self._undo = self._undo, None
                undo()
        return False
