"""Every patch, one module each, named exactly as its patch (``numpy2``, ``exec_stack`` and
``operator_cache`` are packages, in parts).  A patch that belongs to a feature (``freeze``,
``frozen_statistics``, ``fixed_param_names``, ``onednn_fc_bias``, ``convert``, ``onnx``) is
declared here too and imports its wrappers from the feature's package.  The order they stack
in is the registry's (``mxcompat._core.registry.ORDER``).  Nothing is imported here:
``import mxcompat`` loads these modules when mxnet's import starts.
"""
