"""Every example of the documentation runs here (Sybil), on real MXNet.

* ```` ```python ```` blocks run in one namespace per page, in page order; a block that
  starts with ``>>>`` is a doctest, its shown output checked (``...`` matches anything).
* ```` ```console ```` blocks: each ``$ command`` line runs in a shell, and the lines under it
  are its expected output (stdout and stderr together), ``...`` matching anything, e.g. a
  version.  ``$ echo $?`` checks the previous command's exit status.
* ```` ```sh ```` and ```` ```text ```` blocks are shown, not run: installs into the reader's own
  environment, commands that run for many minutes, and outputs recorded on a named machine.
  CONTRIBUTING.md says which test exercises each of those commands.
* ``% skip: next if(not REFERENCE_STACK, reason="...")`` (a MyST comment) before a block skips
  it where it cannot apply: ``REFERENCE_STACK`` is true on MXNet 1.9.1 + Python 3.11 + NumPy
  1.23.5 (tox -e docs), where outputs that name the stack were taken; tox -e docs-py313 runs
  every other example on Python 3.13 and the newest NumPy.

Each page runs in a fresh temporary folder holding ``examples/`` (a link to the checkout's),
with the ``mxcompat`` and ``python`` of the environment running the tests first on ``PATH``.
"""

import doctest
import os
import subprocess
import sys

import pytest
from sybil import Sybil
from sybil.parsers.myst import CodeBlockParser, PythonCodeBlockParser, SkipParser

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _console(example):
    """Run a console block's commands and compare what each prints with the lines shown."""
    commands = []
    for line in example.parsed.splitlines():
        if line.startswith("$ "):
            commands.append([line[2:], []])
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            return "console block: output before any '$ ' command: %r" % line
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    status = 0
    checker = doctest.OutputChecker()
    for command, expected in commands:
        if command.strip() == "echo $?":
            got = "%d\n" % status
        else:
            proc = subprocess.run(
                command,
                shell=True,
                cwd=example.namespace["__cwd__"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=600,
            )
            status, got = proc.returncode, proc.stdout
        want = "\n".join(expected).strip("\n") + "\n" if any(s.strip() for s in expected) else ""
        if want and not checker.check_output(want, got, FLAGS):
            return "$ %s\nexpected:\n%sgot:\n%s" % (command, want, got)
        if not want and command.strip() != "echo $?" and status != 0:
            return "$ %s\nexited %d:\n%s" % (command, status, got)
    return None


def _reference_stack():
    # Read without importing mxnet: a page's own first import must be the one that counts.
    from importlib.metadata import version

    return (
        sys.version_info[:2] == (3, 11)
        and version("numpy") == "1.23.5"
        and (version("mxnet") == "1.9.1")
    )


def _page_setup(namespace):
    # Every page starts in a folder of its own, as a reader's project would.
    import tempfile

    folder = tempfile.mkdtemp(prefix="mxcompat-docs-")
    os.symlink(os.path.join(ROOT, "examples"), os.path.join(folder, "examples"))
    namespace["__cwd__"] = folder
    namespace["REFERENCE_STACK"] = _reference_stack()
    namespace["__old_cwd__"] = os.getcwd()
    os.chdir(folder)


def _page_teardown(namespace):
    import shutil

    os.chdir(namespace["__old_cwd__"])
    shutil.rmtree(namespace["__cwd__"], ignore_errors=True)
    # A page's freezes and unpatches never leak into the next page.
    import mxcompat

    mxcompat.unfreeze()
    mxcompat.patch()


PARSERS = [
    PythonCodeBlockParser(doctest_optionflags=FLAGS),
    CodeBlockParser(language="console", evaluator=_console),
    SkipParser(),
]

SYBIL = Sybil(
    parsers=PARSERS,
    patterns=["*.md"],
    excludes=["_build/*"],
    setup=_page_setup,
    teardown=_page_teardown,
)

pytest_collect_file = SYBIL.pytest()


@pytest.fixture(scope="session")
def built_html():
    """The folder of the built HTML pages (``tox -e docs`` builds it before the tests)."""
    folder = os.environ.get("MXCOMPAT_DOCS_HTML", os.path.join(DOCS, "_build", "html"))
    if not os.path.isfile(os.path.join(folder, "index.html")):
        pytest.fail("no built documentation in %s: run sphinx-build first (tox -e docs)" % folder)
    return folder
