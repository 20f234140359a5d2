"""Model checking a controller app from pytest: `assert_model` fails with the counterexample.

pyswitch is NICE's MAC-learning switch (bundled with netsleuth, written
against netsleuth's in-process app API). Its BUG-II: when h2 answers h1,
pyswitch installs only the rule for h2 -> h1, so h1's next packet to h2
still goes to the controller although both hosts are known by then
(StrictDirectPaths). The model checker explores every interleaving of two
pings on linear,2 and finds the path that shows it.
"""

from __future__ import annotations

import pytest

from netsleuth.testing import ModelViolated, assert_model


def test_pyswitch_has_bug_ii():
    with pytest.raises(ModelViolated) as found:
        assert_model("pyswitch", scenario="direct", properties="StrictDirectPaths")
    cex = found.value
    assert cex.property == "StrictDirectPaths"
    assert "reached the controller" in cex.message
    assert cex.steps[0] == "h1 sends ping 1 to h2"                    # the counterexample, step by step
    assert "netsleuth replay" in str(cex) and cex.counterexample.exists()


def test_the_fixed_pyswitch_passes_the_same_search():
    result = assert_model("pyswitch-fixed", scenario="direct", properties="StrictDirectPaths")
    assert result["completed"] and result["transitions"] > 50
