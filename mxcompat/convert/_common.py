"""What every module of the conversion needs: MXNet (imported at first use, as mxcompat
never imports it itself) and errors in mxcompat's words."""


def _mx():
    import mxnet
    return mxnet


def _names(values):
    return ", ".join(repr(v) for v in values)


def _fail(where, message, error=ValueError):
    return error("mxcompat.%s: %s" % (where, message))


def _as_contexts(ctx):
    if ctx is None:
        return None
    return list(ctx) if isinstance(ctx, (list, tuple)) else [ctx]
