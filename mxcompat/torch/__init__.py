"""Leaving MXNet for PyTorch: ``to_torch`` (a model as a ``torch.nn.Module`` whose code mirrors
the model: the Gluon block tree as modules, stock layers, MXNet's semantics) and
``to_torch_optimizer`` (MXNet's update rules as a ``torch.optim.Optimizer``).  torch is imported
at the first call only.

Layout: ``codegen`` (the symbol graph read; no torch) with the emitters, ``nodes`` (the node
and its attributes, the registries), ``layers`` and ``tensors`` (one per operator: a call in
``expr``'s structure, or a stock layer); the printer: ``blocks`` (which block computes each
node), ``tree`` (each block's call), ``body`` (a class's forward), ``classes`` (the classes,
shared between like blocks) and ``expr`` (the structure and its layout); ``runtime`` (MXNet's
operators in torch, what the written code calls as ``mxops``), ``convert`` (``to_torch``),
``sources`` (what is converted, asked once: a Gluon block, a Module, a triple, a checkpoint,
each building the one graph), ``verify`` (node by node against MXNet), ``mxnet_side`` (MXNet's
outputs computed by another Python), ``optim``
(``to_torch_optimizer``), ``optim_rules`` (MXNet's update rules and schedulers in torch only,
copied beside model.py as ``mxnet_optim.py``), ``optim_state`` (the optimizer's states read
from a Trainer, a Module or a states file: ``mxcompat.formats`` reads the files), ``export``
(the files ``mxcompat torch`` writes)."""

# Loaded at first use (module __getattr__): ``python -m mxcompat.torch.mxnet_side``, MXNet's
# side of a verification in another Python, imports this package and must not need more than
# MXNet and NumPy there (the converter's imports reach wrapt).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .convert import to_torch as to_torch
    from .optim import to_torch_optimizer as to_torch_optimizer

__all__ = ["to_torch", "to_torch_optimizer"]
_PUBLIC = {"to_torch": "convert", "to_torch_optimizer": "optim"}


def __getattr__(name: str) -> object:
    if name in _PUBLIC:
        from importlib import import_module

        return getattr(import_module(__name__ + "." + _PUBLIC[name]), name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
