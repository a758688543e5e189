"""What every way in or out of MXNet needs (convert/, onnx/, torch/, the CLI): MXNet imported at
first use (mxcompat never imports it itself), errors in mxcompat's words, checked flags and a
checkpoint's two files."""

import os


def mxnet_importable():
    """Whether an ``import mxnet`` would find MXNet (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("mxnet") is not None
    except (ImportError, ValueError):
        return False


def import_mxnet():
    import mxnet

    return mxnet


def quoted(values):
    return ", ".join(repr(v) for v in values)


def fail(where, message, error=ValueError):
    return error("mxcompat.%s: %s" % (where, message))


def check_flag(value, name, where):
    # copy="no" is truthy: a typo would silently do the opposite.
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise fail(where, "%s is True or False, not %r" % (name, value), TypeError)


def checkpoint_files(prefix, epoch):
    """MXNet's two files of checkpoint ``(prefix, epoch)``: (symbol file, params file)."""
    return "%s-symbol.json" % prefix, "%s-%04d.params" % (prefix, epoch)


def missing_checkpoint(prefix, epoch, files=None):
    """None when ``files`` (default: both of the checkpoint's) exist; else the message naming
    those not found (MXNet's own error there is a C++ stack trace)."""
    files = checkpoint_files(prefix, epoch) if files is None else files
    missing = [f for f in files if not os.path.isfile(f)]
    if not missing:
        return None
    return "no checkpoint %s, epoch %d: %s not found" % (prefix, epoch, " and ".join(missing))


def infer_shapes(symbol, shapes, what, where):
    """``symbol.infer_shape(**shapes)``, an error in mxcompat's words when they do not fit."""
    try:
        # The partial form: infer_shape prints its arguments to stdout before raising.
        result = symbol.infer_shape_partial(**shapes)
    except Exception as err:
        # MXNetError's text is a C++ trace; its "Error in operator" line says what is wrong.
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        reason = next(
            (line for line in lines if "Error in operator" in line or "Check failed" in line),
            lines[0] if lines else type(err).__name__,
        )
        raise fail(
            where,
            "the %s %s do not fit the model: %s"
            % (
                what,
                ", ".join("%s=%s" % kv for kv in shapes.items()),
                reason.replace("MXNetError: ", ""),
            ),
        ) from None
    if any(not s or 0 in s for s in result[0] + result[2]):
        raise fail(
            where,
            "the %s %s are not enough to infer the shapes of the model's "
            "parameters" % (what, ", ".join("%s=%s" % kv for kv in shapes.items())),
        )
    return result
