"""The project's own tools, run from the checkout as ``python -m tools.<name>``; not installed."""
