"""This repository's bookkeeping for its CI, not part of the example (your project does not need it).

netsleuth's own suite sorts tests by what they need (`make test-fast` runs
neither `real` nor `slow` ones): a test here that starts a real controller
(through the netsleuth_network fixture, or by taking the controller under
test from netsleuth_controller) is `real`, and the Hypothesis one `slow`.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not str(item.path).startswith(str(__file__).rsplit("/", 1)[0]):
            continue
        names = getattr(item, "fixturenames", ())
        if "netsleuth_network" in names or "netsleuth_controller" in names:
            item.add_marker(pytest.mark.real)
        if "hypothesis" in item.name:
            item.add_marker(pytest.mark.slow)
