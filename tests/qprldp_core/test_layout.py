"""The layout of ``qprldp_core``: an acyclic import graph, no private names across modules.

Read from the source with :mod:`ast` (nothing is imported), every ``import`` statement counts,
also those inside functions (lazy imports): a lazy import hides a cycle, it does not remove it.

* No cycle: importing module ``m`` needs the module ``t`` it names, and the packages above ``t``
  that are not above ``m`` (those run their ``__init__`` first). The graph of these edges is
  acyclic.
* ``qprldp_core`` never imports ``pennylane_qshiftdp``, and imports PennyLane only inside a
  function (``certify_device``): the package imports without it.
* No module imports a private name (``_x``) from another module: helpers shared between modules
  have public names inside private modules (``_validation``, ``_numerics``, ``channels/_checks``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "qprldp_core"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imports(name: str):
    """``(node, target_module, imported_names)`` for every import statement of module ``name``."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    here = name if _is_package(name) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            yield node, target, [alias.name for alias in node.names]


def _edges(name: str) -> set[str]:
    out = set()
    for _, target, names in _imports(name):
        targets = [target] + [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
        for t in targets:
            if t not in MODULES:
                continue  # not part of qprldp_core
            for dep in [*_ancestors(t), t]:
                if dep != name and dep not in _ancestors(name):
                    out.add(dep)
    return out


def test_every_module_is_found():
    assert {"qprldp_core", "qprldp_core.channels.channel", "qprldp_core.certify.device"} <= set(
        MODULES)


def test_import_graph_is_acyclic():
    graph = {name: _edges(name) for name in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def test_the_cycle_check_finds_a_cycle(monkeypatch):
    """The check above is not vacuous: a lazy import of certify inside privacy is a cycle."""
    original = _edges

    def with_cycle(name: str) -> set[str]:
        extra = {"qprldp_core.certify"} if name == "qprldp_core.privacy.values" else set()
        return original(name) | extra

    monkeypatch.setitem(globals(), "_edges", with_cycle)
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_import_graph_is_acyclic()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_application_import_and_pennylane_only_lazily(name):
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    for node, target, _ in _imports(name):
        root = target.split(".")[0]
        assert root != "pennylane_qshiftdp", f"{name} imports {target}"
        if root in ("pennylane", "torch", "opacus"):
            assert id(node) not in top_level, f"{name} imports {target} at module level"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_name_is_imported_from_another_module(name):
    bad = []
    for node, target, names in _imports(name):
        if isinstance(node, ast.ImportFrom) and target != name:
            bad += [f"from {target} import {n}" for n in names if n.startswith("_")]
    assert not bad, f"{name}: {bad}"


def test_no_module_is_too_long():
    """One concept per module: none is longer than 400 lines."""
    long = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in MODULES.items()}
    assert {n: k for n, k in long.items() if k > 400} == {}


def test_api_pages_document_each_public_name_once():
    """``docs/api/qprldp_*.md``: every name of ``qprldp_core.__all__`` on exactly one module page.

    A package directive with ``members: false`` shows the package's docstring only.
    """
    import collections
    import importlib
    import re

    import qprldp_core

    counts: collections.Counter = collections.Counter()
    for page in sorted((ROOT / "docs" / "api").glob("qprldp_*.md")):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^::: *([\w.]+)\n((?:[ \t]+.*\n)*)", text + "\n", re.M):
            target, options = m.group(1), m.group(2)
            if re.search(r"members: *false", options):
                continue
            if target in MODULES:
                counts.update(importlib.import_module(target).__all__)
            else:
                counts[target.rpartition(".")[2]] += 1
    assert {n: counts[n] for n in qprldp_core.__all__ if counts[n] != 1} == {}
