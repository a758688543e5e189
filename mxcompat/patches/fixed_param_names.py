"""Patch ``fixed_param_names``: ``module._fixed_param_names`` lists the module's own fixed names
and the parameters the ``mxcompat.freeze`` registry matches.  What it reads inside MXNet's own
bind, and why: ``mxcompat/freeze/fixed_param_names.py``, whose wrappers this declares."""

from .._core.registry import Patch, Target, register
from ..freeze.fixed_param_names import ATTR, FixedNamesAttribute, mxnet_internal

PATCH = "fixed_param_names"
register(
    Patch(
        PATCH,
        "module._fixed_param_names lists the module's fixed names and the parameters the "
        "mxcompat.freeze registry matches (Module, BucketingModule).",
        targets=[
            Target("mxnet.module.module", "Module." + ATTR, new=FixedNamesAttribute()),
            Target(
                "mxnet.module.bucketing_module",
                "BucketingModule." + ATTR,
                new=FixedNamesAttribute(),
            ),
            Target("mxnet.module.module", "Module.bind", mxnet_internal),
            Target("mxnet.module.bucketing_module", "BucketingModule.bind", mxnet_internal),
            Target(
                "mxnet.module.bucketing_module", "BucketingModule.switch_bucket", mxnet_internal
            ),
        ],
    )
)
