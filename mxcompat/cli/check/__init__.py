"""``mxcompat check``: a tiny real scenario per feature on the installed MXNet.

Each check returns a short detail or raises ``Skip(reason)``; anything else it raises is a
failure.  One line per check, then the versions; exit 0 when every applicable check passed.
"""

# Importing the scenarios registers every check, in the order they run.
# isort: off
from . import scenarios  # noqa: F401
from . import numpy_scenarios  # noqa: F401
from . import model_scenarios  # noqa: F401

# isort: on
from .runner import FAIL, OK, SKIP, Skip, check, main, run_checks  # noqa: F401
