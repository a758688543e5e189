"""mxcompat's own version, written once: the package's ``__version__``, the wheel's metadata
(``pyproject.toml`` reads it here) and the core's report of the running stack read it."""

VERSION = "0.1.0"
