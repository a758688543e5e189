"""``mxcompat.to_torch``: a Module, HybridBlock, symbol triple or checkpoint to a
``torch.nn.Module`` whose code mirrors the model (the block tree: blocks.py, tree.py,
classes.py), MXNet's operator semantics where PyTorch's differ (runtime.py), the parameters
copied bit for bit, and every node checked against MXNet's (verify.py)."""

from __future__ import annotations

import itertools
import linecache
import numbers
import sys
from typing import Any, Callable, Iterator, Mapping

from .._core.conversion import check_flag, fail
from ..convert.shared import shape_list
from . import classes, codegen, tree
from .nodes import Unsupported

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Sequence, Tuple, Union

    import numpy as np
    import torch
    from mxnet.gluon import HybridBlock
    from mxnet.module import Module
    from mxnet.ndarray import NDArray
    from mxnet.symbol import Symbol

    Shape = Union[List[int], Tuple[int, ...]]
    Shapes = Sequence[Shape]

WHERE = "to_torch"
INSTALL_HINT = "pip install 'mxcompat[torch]' (the CPU build: see the PyTorch install page)"
_counter = itertools.count()


def import_torch(where: str = "mxcompat.to_torch") -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError("%s needs torch: %s" % (where, INSTALL_HINT)) from None
    return torch


def _build(
    graph: tree.Graph, blocks: tree.Blocks | None = None, root: str = "MXNetModel"
) -> tree.Written:
    """The module tree's ``tree.Written`` for ``graph``: along ``blocks`` (a Gluon block's
    tree) where they cut the graph into one call per block, else the tree Gluon's names spell,
    else one flat module."""
    from .blocks import flat_blocks, name_blocks

    def trees() -> Iterator[tree.Blocks | None]:
        if blocks is not None:
            yield blocks
        yield name_blocks(graph)  # None where the names spell no tree
        yield flat_blocks(graph)

    doc = "Converted from MXNet by mxcompat.to_torch."
    for found in trees():
        if found is None:
            continue
        try:
            return classes.write(graph, found, root, doc)
        except tree.NotATree:
            continue
        except Unsupported as exc:
            refused = graph.refusals()
            if all(e.node != exc.node for e in refused):
                refused.insert(0, exc)
            message = codegen.unsupported_message({}, set(), refused)
            raise fail(WHERE, message, NotImplementedError) from None
    raise AssertionError("the flat module is always a tree")


def _compile(source: str, filename: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    from . import runtime

    torch = import_torch()
    namespace = {
        "torch": torch,
        "nn": torch.nn,
        "F": torch.nn.functional,
        "mxops": runtime,
        "__name__": filename,
    }
    namespace.update(extra or {})
    # Registered so a traceback through forward() shows the generated line.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own generated code)
    return namespace


def _load_values(
    module: torch.nn.Module, params: Mapping[str, Any], names: Mapping[str, str], torch: Any
) -> None:
    """Every parameter and buffer from MXNet's array, bit for bit (float32 stays float32)."""
    with torch.no_grad():
        for name, tensor in itertools.chain(module.named_parameters(), module.named_buffers()):
            array = params[names[name]]
            array = array.asnumpy() if hasattr(array, "asnumpy") else array.copy()
            value = torch.from_numpy(array)
            if tuple(value.shape) != tuple(tensor.shape):
                raise fail(WHERE, "%s has shape %s in MXNet" % (name, value.shape))
            tensor.data = value


def to_torch(
    model: Module
    | HybridBlock
    | tuple[Symbol, dict[str, NDArray], dict[str, NDArray]]
    | tuple[str, int],
    input_shapes: Shapes | dict[str, Shape] | Shape | None = None,
    *,
    verify: bool = True,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> torch.nn.Module:
    """``model`` as a ``torch.nn.Module`` with MXNet's semantics, its code (``module.code``)
    the model's own structure: a Gluon block's tree as modules (one class per block class,
    ``HybridSequential`` as ``nn.Sequential``), or the tree its parameters' names spell, else
    one module; stock layers (``nn.Conv2d``, ``nn.Linear``, ...) where MXNet's semantics are
    theirs, ``mxops`` (runtime.py) where they differ.

    ``model``: a ``Module``, a ``HybridBlock`` with initialised parameters, a ``(symbol,
    arg_params, aux_params)`` triple, or a checkpoint as ``(prefix, epoch)``.  Parameters
    become ``torch.nn.Parameter`` and auxiliary states (BatchNorm statistics) buffers, their
    ``state_dict`` keys following the tree (``features.0.weight``; ``module.mxnet_names`` gives
    each key's MXNet name), copied bit for bit; those MXNet would not train
    (``fixed_param_names``, a Gluon ``grad_req='null'``, ``mxcompat.freeze``) have
    ``requires_grad=False``, and BatchNorm statistics frozen in mxcompat's registry do not move
    in training (a Gluon statistic's ``grad_req='null'`` is every statistic's: they move, as in
    Gluon).  The forward takes the graph's inputs in order, then the loss heads' labels
    (default None: inference; given, the heads' backward is MXNet's).

    ``verify``: run MXNet and the module on a seeded random input of ``input_shapes`` (a list
    in input order, a dict by name or one tuple; a bound Module's own by default) and compare
    every node's output (``|torch - mxnet| <= atol + rtol * max|mxnet|``).  Where one differs,
    every node is computed again from MXNet's own inputs: the first node that differs there is
    named in an ``AssertionError``; where none does, the model amplifies float32's rounding
    (near-equal scores, saturated logits) and one ``MXCompatWarning`` says where its outputs
    part from MXNet's.  An operator (or an attribute of one) that is
    not mapped raises ``NotImplementedError`` naming it, its node and the supported list.
    """
    verify = check_flag(verify, "verify", WHERE)
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
            raise fail(WHERE, "%s is a number >= 0, not %r" % (name, value), TypeError)
    return _convert(model, input_shapes, verify, rtol, atol)


def _convert(
    model: Any,
    input_shapes: Shapes | dict[str, Shape] | Shape | None,
    verify: bool,
    rtol: float,
    atol: float,
    verify_with: str | None = None,
) -> torch.nn.Module:
    """to_torch's work; ``verify_with``: another Python whose MXNet checks a checkpoint."""
    from .sources import source

    torch = import_torch()
    src = source(model)
    written = _build(src.graph, src.blocks(), src.root)
    filename = "<mxcompat.to_torch %d>" % next(_counter)
    namespace = _compile(written.source, filename)
    module = namespace[written.root]()
    _load_values(module, src.params, written.mxnet_names, torch)
    module.code = written.source
    module.mxnet_inputs = list(written.inputs)
    module.mxnet_labels = list(written.labels)
    module.mxnet_names = dict(written.mxnet_names)
    module.mxnet_written = written
    module.eval()
    if verify:
        names = written.inputs
        shapes = dict(zip(names, shape_list(input_shapes, names, src.known, WHERE)))
        # record: this module's forward that keeps every node's output (verify.py imports
        # nothing from here).
        src.check(module, written, shapes, rtol, atol, record, verify_with)
    return module


def record(
    module: torch.nn.Module,
    written: tree.Written,
    feed: Mapping[str, np.ndarray],
    forced: Mapping[str, Sequence[np.ndarray]] | None = None,
) -> dict[str, Any]:
    """{MXNet node name: output(s)} of one forward of ``module`` (its mode as it is): the
    same classes, written to record each node's output, on ``module``'s state.  ``forced``
    ({node: MXNet's outputs}): each node then goes on with MXNet's outputs in place of its own,
    so that every node is computed from MXNet's inputs."""
    torch = sys.modules["torch"]
    rec: dict[str, Any] = {}
    paths: dict[int, str] = {}

    def _rec(instance: Any, k: int, value: Any) -> Any:
        # An instance of no known path (None) finds no node, as meant.
        node = written.record_nodes.get(paths.get(id(instance)), {}).get(k)  # type: ignore[arg-type]
        if node is None:
            return value
        rec[node] = value
        return _replaced(value, forced, node, torch)

    filename = "<mxcompat.to_torch record %d>" % next(_counter)
    namespace = _compile(written.record_source, filename, {"_rec": _rec})
    twin = namespace[written.root]()
    # The module's own tensors (assign): a training forward moves its statistics.
    twin.load_state_dict(module.state_dict(), assign=True)
    twin.train(module.training)
    handles: list[Any] = []
    for path, sub in twin.named_modules():
        paths[id(sub)] = path
        node = written.layer_nodes.get(path)
        if node is not None:
            handles.append(sub.register_forward_hook(_layer_hook(rec, node, forced, torch)))
    args = [torch.from_numpy(feed[n]) for n in written.inputs]
    try:
        with torch.no_grad():
            twin(*args)
    finally:
        for h in handles:
            h.remove()
    return rec


def _layer_hook(
    rec: dict[str, Any], node: str, forced: Mapping[str, Sequence[np.ndarray]] | None, torch: Any
) -> Callable[[Any, Any, Any], Any]:
    def hook(_module: Any, _args: Any, output: Any) -> Any:
        rec[node] = _outputs(output)
        return _replaced(output, forced, node, torch) if forced is not None else None

    return hook


def _replaced(
    value: Any, forced: Mapping[str, Sequence[np.ndarray]] | None, node: str, torch: Any
) -> Any:
    """``value`` with each tensor in it (in order, nested as ``nn.LSTM``'s ``(output, (h,
    c))``) replaced by MXNet's output of ``node`` where ``forced`` has one of its shape; as it
    is where not."""
    if forced is None or node not in forced:
        return value
    arrays = iter(forced[node])

    def swap(item: Any) -> Any:
        if isinstance(item, (tuple, list)):
            return type(item)(swap(i) for i in item)
        want = next(arrays, None)
        if not isinstance(item, torch.Tensor) or want is None:
            return item
        if tuple(want.shape) != tuple(item.shape):
            return item
        return torch.tensor(want, dtype=item.dtype)

    return swap(value)


def _outputs(output: Any) -> Any:
    """A layer's output as the node's outputs: ``nn.LSTM``'s ``(output, (h, c))`` as
    ``[output, h, c]``."""
    if not isinstance(output, (tuple, list)):
        return output
    flat: list[Any] = []
    for item in output:
        flat.extend(item if isinstance(item, (tuple, list)) else [item])
    return flat
