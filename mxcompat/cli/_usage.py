"""The error of a command asked for what it cannot do (a bad option value, a missing tool)."""


class UsageError(Exception):
    """What was asked cannot be done; the message says why.  ``mxcompat`` prints the command's
    usage and ``mxcompat COMMAND: error: MESSAGE`` and exits 2, as for a bad option."""
