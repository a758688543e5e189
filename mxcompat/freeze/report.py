"""``frozen_report``: frozen and trainable parameters, and BatchNorm statistics, of a Module
or a Gluon Block, printed like sockeye's parameter log."""

from __future__ import annotations

import pprint

from .._core.registry import is_active
from . import registry

# Names for annotations only: type checkers take this block as run, Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from mxnet.gluon import Block, ParameterDict, Trainer
    from mxnet.module import BaseModule as Module

# --- the report -------------------------------------------------------------------------------


class FrozenReport:
    """Frozen and trainable parameters of a Module or a Gluon Block.

    ``frozen``/``trainable``: names; ``frozen_params``/``trainable_params``: their counts;
    ``frozen_elements``/``trainable_elements``: their sizes summed.  ``str(report)`` prints
    like sockeye's parameter log.  A parameter whose shape is not inferred yet counts 0
    elements.
    """

    frozen: tuple[str, ...]
    trainable: tuple[str, ...]
    frozen_params: int
    trainable_params: int
    frozen_elements: int
    trainable_elements: int
    total_elements: int
    statistics: tuple[str, ...]
    frozen_statistics: tuple[str, ...]
    moving_statistics: tuple[str, ...]

    def __init__(self, entries, statistics=()):
        # entries: (name, shape, dtype name, frozen), in the owner's order; statistics: the
        # same for BatchNorm's running mean/variance (aux states), which no optimizer updates.
        self.entries = tuple(entries)
        self.statistics = tuple(e[0] for e in statistics)
        self.frozen_statistics = tuple(e[0] for e in statistics if e[3])
        self.moving_statistics = tuple(e[0] for e in statistics if not e[3])
        self.frozen = tuple(e[0] for e in self.entries if e[3])
        self.trainable = tuple(e[0] for e in self.entries if not e[3])
        self.frozen_params = len(self.frozen)
        self.trainable_params = len(self.trainable)
        self.frozen_elements = sum(_size(e[1]) for e in self.entries if e[3])
        self.trainable_elements = sum(_size(e[1]) for e in self.entries if not e[3])
        self.total_elements = self.frozen_elements + self.trainable_elements

    def __str__(self) -> str:
        total = self.total_elements

        def pct(n):
            return 100.0 * n / total if total else 0.0

        def described(frozen):
            return ["%s [%s, %s]" % (n, tuple(s), d) for n, s, d, f in self.entries if f == frozen]

        return (
            "# of parameters: %d | trainable: %d (%.2f%%) | fixed: %d (%.2f%%)\n"
            "Trainable parameters:\n%s\nFixed parameters:\n%s%s"
            % (
                total,
                self.trainable_elements,
                pct(self.trainable_elements),
                self.frozen_elements,
                pct(self.frozen_elements),
                pprint.pformat(described(False)),
                pprint.pformat(described(True)),
                self._statistics_line(),
            )
        )

    def _statistics_line(self):
        if not self.statistics:
            return ""
        return "\nStatistics (BatchNorm running mean/variance): %d | moving: %d | fixed: %d%s" % (
            len(self.statistics),
            len(self.moving_statistics),
            len(self.frozen_statistics),
            (
                " %s" % pprint.pformat(list(self.frozen_statistics))
                if self.frozen_statistics
                else ""
            ),
        )

    def __repr__(self) -> str:
        stats = ""
        if self.statistics:
            stats = ", statistics=%d moving/%d fixed" % (
                len(self.moving_statistics),
                len(self.frozen_statistics),
            )
        return "FrozenReport(frozen=%d params/%d elements, trainable=%d params/%d elements%s)" % (
            self.frozen_params,
            self.frozen_elements,
            self.trainable_params,
            self.trainable_elements,
            stats,
        )


def _size(shape):
    size = 1
    for dim in shape:
        size *= int(dim)
    return size


def _dtype_name(dtype):
    try:
        import numpy as np

        return np.dtype(dtype).name
    except Exception:
        return str(dtype)


def _statistic_frozen(name):
    # A statistic holds still only while the frozen_statistics patch is on.
    return is_active("frozen_statistics") and registry.is_frozen(name)


def _merged(parts):
    merged, seen = [], set()
    for entries in parts:
        for entry in entries:
            if entry[0] not in seen:
                seen.add(entry[0])
                merged.append(entry)
    return merged


def _module_entries(module):
    """``(parameter entries, statistic entries)`` of a Module, Bucketing or SequentialModule."""
    if isinstance(getattr(module, "_modules", None), list):  # Sequential
        parts = [_module_entries(sub) for sub in module._modules]
        return _merged(p[0] for p in parts), _merged(p[1] for p in parts)
    if isinstance(getattr(module, "_buckets", None), dict):  # Bucketing
        current = getattr(module, "_curr_module", None)
        if current is None:
            raise ValueError(
                "mxcompat.frozen_report: bind the BucketingModule first; its "
                "parameters are unknown before"
            )
        return _module_entries(current)
    group = getattr(module, "_exec_group", None)
    if getattr(module, "binded", False) and group is not None:
        arrays = dict(zip(group.param_names, (a[0] for a in group.param_arrays)))
        auxs = dict(zip(group.aux_names, (a[0] for a in group.aux_arrays)))
        null = set(n for n, req in getattr(group, "grad_req", {}).items() if req == "null")
    elif getattr(module, "params_initialized", False) and module._arg_params is not None:
        arrays, auxs, null = module._arg_params, module._aux_params or {}, set()
    else:
        raise ValueError(
            "mxcompat.frozen_report: bind the %s or initialise its parameters "
            "first; their shapes are unknown before" % type(module).__name__
        )
    fixed = set(getattr(module, "_fixed_param_names", None) or []) | null
    params = [
        (
            n,
            tuple(arrays[n].shape),
            _dtype_name(arrays[n].dtype),
            n in fixed or registry.is_frozen(n),
        )
        for n in getattr(module, "_param_names", arrays)
        if n in arrays
    ]
    stats = [
        (n, tuple(auxs[n].shape), _dtype_name(auxs[n].dtype), _statistic_frozen(n))
        for n in getattr(module, "_aux_names", auxs)
        if n in auxs
    ]
    return params, stats


def _param_entries(params, blocks=()):
    """``(parameter entries, statistic entries)`` of Gluon Parameters: a statistic is one
    that is not differentiable (BatchNorm's running mean/variance) or an auxiliary state of a
    SymbolBlock's graph (``frozen_statistics.symbol_block_statistics``)."""
    from . import frozen_statistics

    auxiliary = set(map(id, frozen_statistics.symbol_block_statistics(blocks)))
    entries, stats = [], []
    for p in params:
        if not p._differentiable or id(p) in auxiliary:
            stats.append(
                (p.name, tuple(p.shape or ()), _dtype_name(p.dtype), _statistic_frozen(p.name))
            )
        else:
            entries.append(
                (
                    p.name,
                    tuple(p.shape or ()),
                    _dtype_name(p.dtype),
                    p.grad_req == "null" or registry.is_frozen(p.name),
                )
            )
    return entries, stats


def frozen_report(obj: Module | Block | Trainer | ParameterDict) -> FrozenReport:
    """Count the frozen and trainable parameters (and elements) of ``obj``: a bound or
    initialised Module (also Bucketing/SequentialModule), a Gluon Block, a Trainer, or a
    ParameterDict.  Frozen means: matched by the registry, a fixed parameter, or
    ``grad_req == 'null'``.  BatchNorm's running statistics are counted apart
    (``statistics``, ``frozen_statistics``, ``moving_statistics``): held when the registry
    matches them.  ``print(frozen_report(net))`` prints like sockeye."""
    import mxnet as mx

    if isinstance(obj, mx.module.BaseModule):
        return FrozenReport(*_module_entries(obj))
    if isinstance(obj, mx.gluon.Block):
        return FrozenReport(*_param_entries(obj.collect_params().values(), [obj]))
    if isinstance(obj, mx.gluon.Trainer):
        return FrozenReport(*_param_entries(obj._params))
    if isinstance(obj, (mx.gluon.ParameterDict, dict)):
        return FrozenReport(*_param_entries(obj.values()))
    raise TypeError(
        "mxcompat.frozen_report: expected a Module or a Gluon Block (or a Trainer "
        "or ParameterDict), not %s" % type(obj).__name__
    )
