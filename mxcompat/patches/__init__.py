"""The patches that belong to no feature, one module each, named exactly as its patch.

``ORDER`` names every patch mxcompat has, in the order they stack (the registry keeps it,
whatever order their modules happen to be imported in); ``HOMES`` says where the few that
belong to a feature live.  Nothing is imported here: the registry reads these two at
``import mxnet``.
"""

ORDER = (
    "bare_names",
    "labels",
    "onednn_fc_bias",  # below freeze: its Module.bind sees the registry's names among the fixed
    "freeze",
    "frozen_statistics",
    "fixed_param_names",
    "convert",
    "distutils",
    "numpy_names",
    "numpy2",
    "ndarray_to_numpy",
    "unbound_get_params",
    "int_division",
    "onnx",
    "trainer_kvstore_init",
    "dataloader_teardown",
    "dataloader_start_method",
    "dataloader_spawn",  # over dataloader_start_method: both stand in for the same module
    "scipy_chisquare",
    "exec_stack",
    "python_oo",
)

# Patch name -> its module under mxcompat, for the patches that are a feature's internals;
# every other patch is patches.<name>.
HOMES = {
    "onednn_fc_bias": "freeze.onednn_fc_bias",
    "freeze": "freeze",
    "frozen_statistics": "freeze.frozen_statistics",
    "fixed_param_names": "freeze.fixed_param_names",
    "convert": "convert",
    "onnx": "onnx",
}


def module_of(name):
    """The module (under mxcompat) that registers patch ``name``."""
    return HOMES.get(name, "patches." + name)
