"""The conversions' arguments, checked before MXNet sees them."""

from .._core.conversion import fail, import_mxnet, infer_shapes, quoted


def _as_contexts(ctx):
    if ctx is None:
        return None
    return list(ctx) if isinstance(ctx, (list, tuple)) else [ctx]


# --- arguments, checked before MXNet sees them (its own errors are tracebacks from deep
# inside bind or infer_shape, or no error at all: a float dimension is truncated) ----------


def _check_shape(shape, what, where):
    """``shape`` as a tuple of positive ints; ``what`` names it in the error."""
    import numbers

    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)):
        raise fail(
            where,
            "%s: a shape is a tuple of positive ints, e.g. (1, 3, 224, 224), "
            "not %r" % (what, shape),
            TypeError,
        )
    dims = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise fail(
                where,
                "%s: the shape %r has a dimension %r that is not an int" % (what, tuple(shape), d),
                TypeError,
            )
        if d <= 0:
            raise fail(
                where,
                "%s: the shape %r has a dimension %r; every dimension is a "
                "positive int" % (what, tuple(shape), d),
            )
        dims.append(int(d))
    if not dims:
        raise fail(where, "%s: the shape () has no batch dimension" % what)
    return tuple(dims)


def _check_descs(descs, what, where):
    """``data_shapes``/``label_shapes`` as ``[(name, shape)]``: pairs or ``DataDesc``s."""
    if isinstance(descs, (str, bytes, dict)) or not isinstance(descs, (list, tuple)):
        raise fail(
            where,
            "%s is a list of (name, shape) pairs, e.g. [('data', (1, 3, 224, "
            "224))], not %r" % (what, descs),
            TypeError,
        )
    pairs = []
    for d in descs:
        name = getattr(d, "name", None)
        shape = getattr(d, "shape", None)
        if name is None:
            if isinstance(d, (str, bytes)) or not isinstance(d, (list, tuple)) or len(d) != 2:
                raise fail(where, "%s: %r is not a (name, shape) pair" % (what, d), TypeError)
            name, shape = d
        if not isinstance(name, str) or not name:
            raise fail(where, "%s: the name %r is not a non-empty str" % (what, name), TypeError)
        pairs.append((name, _check_shape(shape, "%s[%r]" % (what, name), where)))
    names = [n for n, _ in pairs]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise fail(where, "%s names %s more than once" % (what, quoted(twice)))
    return pairs


def _check_contexts(ctx, name, where):
    """``ctx`` (``None``, a Context or a non-empty list of them) as a list, or ``None``."""
    mx = import_mxnet()
    contexts = _as_contexts(ctx)
    if contexts is not None and (
        not contexts or not all(isinstance(c, mx.context.Context) for c in contexts)
    ):
        raise fail(
            where,
            "%s is an mx.Context (mx.cpu(), mx.gpu(0)) or a non-empty list of "
            "them, not %r" % (name, ctx),
            TypeError,
        )
    return contexts


def _check_names_list(names, what, where):
    if names is None:
        return None
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise fail(
            where, "%s is a list of names, e.g. ('data',), not %r" % (what, names), TypeError
        )
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise fail(
            where,
            "%s: %s %s not a non-empty str" % (what, quoted(bad), "is" if len(bad) == 1 else "are"),
            TypeError,
        )
    if len(set(names)) != len(names):
        raise fail(
            where,
            "%s names %s more than once"
            % (what, quoted(sorted(set(n for n in names if list(names).count(n) > 1)))),
        )
    return list(names)


def _check_bind_shapes(out, data_names, label_names, data_shapes, label_shapes, where):
    """The shapes a bind is given, checked against the module's names and its graph, so
    ``Module.bind`` cannot fail half-way (MXNet's errors there are asserts and C++ traces)."""
    for what, names, shapes in (
        ("data_shapes", data_names, data_shapes),
        ("label_shapes", label_names, label_shapes),
    ):
        if shapes is None:
            continue
        given = [n for n, _ in shapes]
        if sorted(given) != sorted(names):
            raise fail(
                where,
                "%s names %s, the module's %s are %s"
                % (
                    what,
                    quoted(given) or "nothing",
                    what.split("_")[0] + " names",
                    quoted(names) or "none",
                ),
            )
    pairs = list(data_shapes) + list(label_shapes or [])
    batches = sorted(set(shape[0] for _, shape in pairs))
    if len(batches) > 1:
        raise fail(
            where,
            "every data and label shape starts with the same batch size; "
            "these start with %s" % ", ".join(map(str, batches)),
        )
    infer_shapes(out, dict(pairs), "shapes", where)
