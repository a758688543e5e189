"""What ``mxcompat matrix`` shows while it runs: one line per env, or a live table."""

import shutil
import threading

from ._common import PASSED


class PlainDisplay:
    """One line per state change (logs, CI)."""

    def __init__(self, envs, out):
        self.out = out
        self.lock = threading.Lock()

    def update(self, env):
        with self.lock:
            if env.result is not None:
                text = "%s: %s (%.1f s)" % (env.name, env.result, env.elapsed)
                if env.result != PASSED and env.first_failure:
                    text += ": " + env.first_failure
            else:
                text = "%s: %s" % (env.name, env.state)
            self.out.write(text + "\n")
            self.out.flush()

    def start(self):
        pass

    def stop(self):
        pass


class LiveDisplay(PlainDisplay):
    """One line per env, redrawn in place twice a second (a terminal).

    Hand-written rather than ``rich``/``tqdm``: two ANSI sequences are all it needs, and a
    display library would be one more dependency in every legacy environment mxcompat is
    installed into (Python 3.7, old pins), for one command."""

    def __init__(self, envs, out):
        PlainDisplay.__init__(self, envs, out)
        self.envs = envs
        self.drawn = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop)
        self.thread.daemon = True

    def update(self, env):
        with self.lock:
            self._draw()

    def _line(self, env):
        state = env.result or env.state
        text = "%-28s %-10s %6.1f s" % (env.name, state, env.elapsed)
        if env.result not in (None, PASSED) and env.first_failure:
            text += "  " + env.first_failure
        return text[: shutil.get_terminal_size((100, 20)).columns - 1]

    def _draw(self):
        if self.drawn:
            self.out.write("\x1b[%dF" % self.drawn)
        for env in self.envs:
            self.out.write("\x1b[2K" + self._line(env) + "\n")
        self.drawn = len(self.envs)
        self.out.flush()

    def _loop(self):
        while not self.done.wait(0.5):
            with self.lock:
                self._draw()

    def start(self):
        with self.lock:
            self._draw()
        self.thread.start()

    def stop(self):
        self.done.set()
        self.thread.join()
        with self.lock:
            self._draw()
