"""The project's own tools, run from a checkout and never shipped in the wheel: the judge of
mxcompat by every MXNet release's own unittest files (``python -m tools.mxnet_suite``), the
one reader of pytest's summary lines (``pytest_summary``, for ``.ci/run``), and what the tests
and the benchmarks share about processes (``processes``, ``horovod``)."""
