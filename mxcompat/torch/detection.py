"""Emitters of MXNet's detection operators (boxes, regions of interest, anchors, proposals),
registered in ``nodes``; their semantics are in ``runtime`` (``mxops.box_nms``, ...).
Imports neither torch nor mxnet."""
