"""Patch ``freeze``: the ``mxcompat.freeze`` registry holds on every update path of MXNet
(Module bind and update, the Module containers, Gluon's Trainer).  How each path is held, and
why there: ``mxcompat/freeze/__init__.py``; the wrappers are the feature's own."""

from .._core.registry import Patch, Target, register
from ..freeze.binding import wrap_install_monitor, wrap_module_bind, wrap_module_forward
from ..freeze.hot_path import freeze_armed
from ..freeze.module import wrap_container_update, wrap_module_update, wrap_update_fn
from ..freeze.trainer import wrap_trainer

PATCH = "freeze"
register(
    Patch(
        PATCH,
        "The mxcompat.freeze registry: frozen parameters are never updated, on every path.",
        # The hot targets (a step's path) only while something is frozen or left to rebind.
        armed=freeze_armed,
        targets=[
            Target("mxnet.model", "_update_params", wrap_update_fn, hot=True),
            Target("mxnet.model", "_update_params_on_kvstore", wrap_update_fn, hot=True),
            Target(
                "mxnet.model",
                "_update_params_on_kvstore_nccl",
                wrap_update_fn,
                optional=True,
                hot=True,
            ),
            # mxnet/module/module.py imports its own references to these (`from ..model import`,
            # in every release), so wrapping mxnet.model's alone leaves Module.update unfrozen.
            Target("mxnet.module.module", "_update_params", wrap_update_fn, hot=True),
            Target("mxnet.module.module", "_update_params_on_kvstore", wrap_update_fn, hot=True),
            Target("mxnet.module.module", "Module.bind", wrap_module_bind),
            Target("mxnet.module.module", "Module.update", wrap_module_update, hot=True),
            # Frozen or unfrozen after bind: the next forward rebinds (freeze.binding.settle).
            Target("mxnet.module.module", "Module.forward", wrap_module_forward, hot=True),
            Target("mxnet.module.module", "Module.install_monitor", wrap_install_monitor),
            Target(
                "mxnet.module.bucketing_module",
                "BucketingModule.update",
                wrap_container_update,
                hot=True,
            ),
            Target(
                "mxnet.module.sequential_module",
                "SequentialModule.update",
                wrap_container_update,
                hot=True,
            ),
            Target(
                "mxnet.gluon.trainer", "Trainer._allreduce_grads", wrap_trainer(False), hot=True
            ),
            Target("mxnet.gluon.trainer", "Trainer._update", wrap_trainer(True), hot=True),
        ],
    )
)
