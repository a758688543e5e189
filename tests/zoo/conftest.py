"""The zoo's checkpoints, built once per test run (tests/support/zoo.py builds them)."""

import os

import pytest

from tests.support import zoo


@pytest.fixture(scope="session")
def zoo_model(tmp_path_factory):
    """``zoo_model(name)`` -> ``zoo.Built``: the model's checkpoint, input and MXNet's outputs.
    One folder for the whole run: pytest-xdist's workers share their parent's, and the first
    to build a model leaves it for the others."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    root = str(base / "zoo-models")

    def get(name):
        return zoo.build(name, root)

    return get
