"""What the commands share about their arguments: the error of a command asked for what it
cannot do (a bad option value, a missing tool), the errors a conversion reports in one line,
and the type of an `--input-shape`."""

import argparse
import sys


class UsageError(Exception):
    """What was asked cannot be done; the message says why.  ``mxcompat`` prints the command's
    usage and ``mxcompat COMMAND: error: MESSAGE`` and exits 2, as for a bad option."""


# What a conversion command (onnx, torch) reports as its one-line error: a bad file, a missing
# extra, an operator or value the conversion refuses, MXNet's own checks.
CONVERSION_ERRORS = (
    OSError,
    ImportError,
    NotImplementedError,
    ValueError,
    TypeError,
    AssertionError,
)


def conversion_failed(command, exc):
    """Print ``exc`` as ``mxcompat COMMAND``'s one-line error; the exit status.  Those not in
    CONVERSION_ERRORS (MXNetError and the like) keep their type's name: it says whose it is."""
    if isinstance(exc, CONVERSION_ERRORS):
        sys.stderr.write("mxcompat %s: %s\n" % (command, exc))
    else:
        sys.stderr.write("mxcompat %s: %s: %s\n" % (command, type(exc).__name__, exc))
    return 1


def parse_shape(text):
    """``--input-shape 1,3,224,224`` as a tuple of positive ints (argparse's type)."""
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        shape = ()
    if not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError("%r is not a shape like 1,3,224,224" % text)
    return shape
