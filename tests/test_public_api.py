"""Every name in each package's __all__ exists."""

import importlib

import pytest


@pytest.mark.parametrize("package", ["pennylane_qshiftdp", "qprldp_core"])
def test_all_names_exist(package):
    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert hasattr(mod, name), f"{package}.{name} is in __all__ but missing"


def _run(code: str) -> str:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


HEAVY = ("torch", "pennylane", "opacus", "scipy", "sklearn", "matplotlib")
APPLICATION = ("pennylane_qshiftdp.app",)


def test_import_loads_neither_heavy_packages_nor_the_application():
    out = _run("import sys, pennylane_qshiftdp\n"
               f"print([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}"
               f" or m.startswith({APPLICATION!r})])")
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", ["param_shift", "PrivacyLedger"])
def test_a_library_name_loads_no_application_module_and_registers_opacus_hooks(name):
    """The first public name used registers the grad sampler and the ModuleValidator fixer
    for PennyLane's TorchLayer (before any model can be made private)."""
    out = _run(
        "import sys, pennylane_qshiftdp as qs\n"
        f"qs.{name}\n"
        "import pennylane as qml\n"
        "from opacus.grad_sample import GradSampleModule\n"
        "from opacus.validators import ModuleValidator\n"
        "ok = (sys.modules['pennylane_qshiftdp.qnn'].TorchLayer in GradSampleModule.GRAD_SAMPLERS"
        " and qml.qnn.TorchLayer in ModuleValidator.FIXERS)\n"
        f"print(ok, [m for m in sys.modules if m.startswith({APPLICATION!r})])")
    assert out.strip() == "True []"


def test_every_library_name_together_loads_no_application_module():
    """All of the package's library names (and every library subpackage) in one process: none
    imports :mod:`pennylane_qshiftdp.app` (the import contract checks the static imports)."""
    out = _run(
        "import importlib, pathlib, sys, pennylane_qshiftdp as qs\n"
        "for name in qs._LIBRARY: getattr(qs, name)\n"
        "root = pathlib.Path(qs.__file__).parent\n"
        "for path in sorted(root.rglob('*.py')):\n"
        "    parts = path.relative_to(root.parent).with_suffix('').parts\n"
        "    name = '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)\n"
        "    if not name.startswith('pennylane_qshiftdp.app'):\n"
        "        importlib.import_module(name)\n"
        f"print([m for m in sys.modules if m.startswith({APPLICATION!r})])")
    assert out.strip() == "[]"


def test_the_static_imports_match_the_lazy_table():
    """``__init__``'s TYPE_CHECKING imports (the API docs' view) name each public name from the
    module its ``__getattr__`` loads it from."""
    import ast
    from pathlib import Path

    import pennylane_qshiftdp as qs

    tree = ast.parse(Path(qs.__file__).read_text(encoding="utf-8"))
    static = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                for alias in imp.names:
                    static[alias.name] = imp.module or alias.name
    lazy = {**{k: v or k for k, v in qs._LIBRARY.items()}, **qs._APPLICATION}
    assert static == lazy
    assert sorted(lazy) == sorted(qs.__all__)


def test_sensitivity_is_the_function_after_its_module_is_imported():
    """The public function ``sensitivity`` lives in ``gradients.sensitivity_bound``: importing
    that module first leaves the package's name bound to the function."""
    out = _run("import pennylane_qshiftdp.gradients.sensitivity_bound\n"
               "import pennylane_qshiftdp as qs\n"
               "print(callable(qs.sensitivity), type(qs.sensitivity).__name__)")
    assert out.strip() == "True function"
