"""netsleuth for test suites: live networks, input sequences against real controllers, model checking.

- :class:`LiveNetwork` (what the pytest fixture ``netsleuth_network`` returns):
  a real controller in its own process and a mock network, driven step by step.
- :func:`check_inputs`: apply a sequence of inputs (``netsleuth.testing.inputs``,
  drawn by ``netsleuth.strategies.inputs`` under Hypothesis) and raise
  :class:`InvariantViolated` at the first lasting violation.
- :func:`assert_model`: model-check an app and fail with the counterexample.

The names are imported on first use, so ``import netsleuth.testing`` costs
nothing until one of them is touched.
"""

from __future__ import annotations

from typing import Any

from netsleuth import lazy_attribute

_WHERE = {
    "LiveNetwork": "network", "PingallResult": "network", "NetworkUseError": "network",
    "check_inputs": "sequences", "InvariantViolated": "sequences", "Reproduction": "sequences",
    "UnreproducedViolation": "sequences",
    "assert_model": "model", "ModelViolated": "model",
    "Send": "inputs", "Move": "inputs", "FailLink": "inputs", "RecoverLink": "inputs", "FailSwitch": "inputs",
    "RecoverSwitch": "inputs", "CrashController": "inputs", "RestartController": "inputs",
    "describe_inputs": "inputs",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _WHERE, name)
