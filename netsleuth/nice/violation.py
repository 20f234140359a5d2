"""A property violation found by the model checker: a live-checker finding with the property's name.

The live invariant checker reports a
:class:`~netsleuth.invariants.forwarding.Finding` (invariant, message,
hosts, switches, details), which a run records as a ``violation`` trace
event.  A model-checking property violation is the same concept -- a
named check that failed, and the hosts and switches it involves -- so it
*is* a ``Finding``: whatever reads findings (reports, trace writing,
conversion of a counterexample into a real run) reads both.  ``prop`` is
the property's name under the checker's own word for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsleuth.invariants.forwarding import Finding


@dataclass(frozen=True, slots=True)
class PropertyViolation(Finding):
    """A model-checking property (``invariant``) that a path of the search violated."""

    @property
    def prop(self) -> str:
        """The violated property's name (the same as ``invariant``)."""
        return self.invariant

    def to_json(self) -> dict[str, Any]:
        return {"property": self.invariant, "message": self.message, "hosts": list(self.hosts),
                "switches": list(self.switches)}


__all__ = ["PropertyViolation"]
