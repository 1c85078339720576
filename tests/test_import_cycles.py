"""No import cycle among the modules of pennylane_qshiftdp and qprldp_core (issue 46).

Every import counts, including imports inside functions and under ``TYPE_CHECKING`` (grimp reads
them all). ``lint-imports`` (pyproject.toml, contract ``acyclic``) checks cycles between sibling
packages and modules; this checks single modules, which that contract does not see when a
package's ``__init__`` is one end of the loop.
"""

import grimp
import pytest


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("pennylane_qshiftdp", "qprldp_core", cache_dir=None)


def test_no_module_imports_a_module_that_imports_it_back(graph):
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append(" -> ".join((importer, *back)))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
