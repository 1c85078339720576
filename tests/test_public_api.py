"""Every name in each package's __all__ exists."""

import importlib

import pytest


@pytest.mark.parametrize("package", ["pennylane_qshiftdp", "qprldp_core"])
def test_all_names_exist(package):
    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert hasattr(mod, name), f"{package}.{name} is in __all__ but missing"
