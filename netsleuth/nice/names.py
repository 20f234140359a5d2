"""The names `netsleuth check` offers for ``--strategy`` and ``--scenario``, apart from what they name.

The command line declares its options from these tuples; importing the strategies (filters.py) or the
scenarios (scenarios.py) would load the whole model checker for every `netsleuth` command, ``--help``
included. filters.py and scenarios.py take their names from here, so the two cannot disagree.
"""

from __future__ import annotations

STRATEGIES = ("full", "pkt-seq", "no-delay", "unusual", "flow-ir", "random")

SCENARIOS = ("pings", "direct", "mobile", "loop", "bug-iv", "bug-v", "bug-vi", "bug-vii", "bug-viii", "bug-ix",
             "bug-x", "bug-xi", "bug-xii", "bug-xiii")
