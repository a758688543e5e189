"""A converted module's parameters and buffers by their MXNet names (``mxnet_names``)."""


def state_by_mxnet_name(module):
    """{MXNet name: tensor} of ``module.state_dict()``."""
    return {module.mxnet_names[k]: v for k, v in module.state_dict().items()}


def params_by_mxnet_name(module):
    """{MXNet name: parameter} of ``module.named_parameters()``."""
    return {module.mxnet_names[k]: p for k, p in module.named_parameters()}
