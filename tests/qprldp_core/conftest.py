"""Warnings are part of what these tests check: none may leak into the test output.

Every test under this directory runs with UserWarning and RuntimeWarning turned into errors, so a
test that provokes one on purpose must capture it with ``pytest.warns(..., match=...)`` and an
unexpected one (e.g. a NumPy ``divide by zero``) fails the test instead of scrolling past.
"""

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_STRICT = [pytest.mark.filterwarnings("error::UserWarning"),
           pytest.mark.filterwarnings("error::RuntimeWarning")]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            for mark in _STRICT:
                item.add_marker(mark)
