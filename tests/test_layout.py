"""The layout's contracts that import-linter cannot state (the others: ``lint-imports``).

* no module imports a private name (``_x``) from another module: helpers shared between modules
  have public names, in private modules where they are not part of the API;
* every package and subpackage has an ``__all__`` whose names exist;
* the tests mirror the library: each library subpackage has a test folder of the same name.
"""

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pennylane_qshiftdp", "qprldp_core")


def _modules(packages=PACKAGES):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            yield ".".join(parts), path, is_package


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_imports(packages=PACKAGES):
    found = []
    for module, path, is_package in _modules(packages):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _resolve(module, is_package, node)
            if source.split(".")[0] not in PACKAGES or source == module:
                continue
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                # importing a private *module* of a package (``from .. import _compat``) is
                # how private helper modules are used; a private *name* is not
                submodule = ROOT / Path(*source.split("."), name)
                if submodule.with_suffix(".py").exists() or submodule.is_dir():
                    continue
                found.append(f"{module}: from {source} import {name}")
    return found


def test_no_module_imports_a_private_name_from_another_module():
    assert _private_imports() == []


def _packages():
    for package in PACKAGES:
        mod = importlib.import_module(package)
        yield package
        for info in pkgutil.walk_packages(mod.__path__, package + "."):
            if info.ispkg:
                yield info.name


@pytest.mark.parametrize("package", list(_packages()))
def test_every_package_has_an_all_whose_names_exist(package):
    mod = importlib.import_module(package)
    assert isinstance(getattr(mod, "__all__", None), list), f"{package} has no __all__ list"
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert missing == [], f"{package}.__all__ names missing attributes: {missing}"


def test_the_tests_mirror_the_library():
    """Each library subpackage ``pennylane_qshiftdp/x/`` has ``tests/pennylane_qshiftdp/x/``."""
    missing = []
    for package in PACKAGES:
        for sub in sorted(p for p in (ROOT / package).iterdir()
                          if p.is_dir() and (p / "__init__.py").exists()):
            if not (ROOT / "tests" / package / sub.name).is_dir():
                missing.append(f"tests/{package}/{sub.name}/")
    assert missing == []
