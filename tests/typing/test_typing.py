"""The public API as a user's type checker sees it: mypy --strict over a user's file
(api_usage.py) in a folder of its own, so mxcompat is the installed distribution and its
annotations reach mypy only through its py.typed.  Run by the tox env ``typing``."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# A user's configuration: strict, MXNet untyped (it ships no type information).
USER_CONFIG = """[mypy]
strict = True
warn_unused_ignores = True
python_version = %d.%d

[mypy-mxnet.*]
ignore_missing_imports = True
[mypy-mxnet]
ignore_missing_imports = True
""" % sys.version_info[:2]


def _usage():
    with open(os.path.join(HERE, "api_usage.py")) as f:
        return f.read()


def _mypy(tmp_path, text):
    """mypy as a user runs it over ``text`` (a file of theirs), in a folder of its own."""
    pytest.importorskip("mypy", reason="mypy is not installed here (the tox env typing has it)")
    (tmp_path / "user_code.py").write_text(text)
    (tmp_path / "mypy.ini").write_text(USER_CONFIG)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # never the checkout: the installed package
    env.pop("MYPYPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--config-file", "mypy.ini"]
        + ["user_code.py"],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_mxcompat_is_the_installed_typed_distribution():
    import mxcompat

    here = os.path.dirname(os.path.abspath(mxcompat.__file__))
    assert "site-packages" in here, here
    assert os.path.isfile(os.path.join(here, "py.typed"))


def test_a_users_mypy_infers_the_public_signatures(tmp_path):
    proc = _mypy(tmp_path, _usage())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "Success: no issues found in 1 source file"


def test_a_wrong_call_is_reported_where_the_user_wrote_it(tmp_path):
    # The same file with one refusal's ignore taken away: mypy must name that line.
    text = _usage().replace("mxcompat.freeze(1)  # type: ignore[arg-type]", "mxcompat.freeze(1)")
    line = text.splitlines().index("mxcompat.freeze(1)") + 1
    proc = _mypy(tmp_path, text)
    assert proc.returncode == 1
    assert 'user_code.py:%d: error: Argument 1 to "freeze" has incompatible type "int"' % line in (
        proc.stdout
    ), proc.stdout
