"""BigBug's ranking: the most representative race of a cluster.

The paper's intended ranking (section 5):

1. boolean features: keep the graphs that have exactly the boolean features
   present in >= 50% of the cluster's graphs (and lack the others; if no
   graph matches all of them, the graphs that differ in the fewest);
2. numerical features, in the order proactive events, host sends, root
   events: keep the graphs whose value is closest to the cluster's mean;
3. the graph with the fewest events; remaining ties go to the race whose
   events come first in the trace (so the choice does not depend on the
   order the races were listed in).

The original code meant to do the same but, through a stale loop variable,
compared one fixed graph's numbers with the means and never updated its
running minimum, so it returned the *last* graph passing step 1 (and used
the mean number of roots for the proactive comparison).
:func:`original_representative` reproduces that for comparison; it changes
which race is shown, never the cluster counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from netsleuth.races.features import BOOLEAN, Features, mean_features
from netsleuth.races.subgraph import RaceGraph

NUMERIC_ORDER = ("proactive", "host_sends", "roots")


def majority(means: dict[str, Fraction]) -> dict[str, bool]:
    """The boolean features present in at least half of the graphs."""
    return {name: means[name] >= Fraction(1, 2) for name in BOOLEAN}


def representative(members: Sequence[int], graphs: Sequence[RaceGraph], features: Sequence[Features],
                   tie_key: Callable[[int], tuple]) -> int:
    """The paper's ranking over ``members`` (indices into ``graphs``/``features``)."""
    if not members:
        raise ValueError("empty cluster")
    means = mean_features([features[i] for i in members])
    want = majority(means)

    def mismatches(i: int) -> int:
        return sum(getattr(features[i], name) != want[name] for name in BOOLEAN)

    best = min(mismatches(i) for i in members)
    cands = [i for i in members if mismatches(i) == best]
    for name in NUMERIC_ORDER:
        gap = {i: abs(getattr(features[i], name) - means[name]) for i in cands}
        lo = min(gap.values())
        cands = [i for i in cands if gap[i] == lo]
    return min(cands, key=lambda i: (len(graphs[i]), tie_key(i)))


def original_representative(members: Sequence[int], graphs: Sequence[RaceGraph],
                            features: Sequence[Features]) -> int:
    """What the original code returned: the last member with the majority booleans (members in cluster order)."""
    means = mean_features([features[i] for i in members])
    want = majority(means)
    cands = [i for i in members if all(getattr(features[i], n) == want[n] for n in BOOLEAN)]
    if not cands:       # the original asserted here
        raise AssertionError("no graph has the cluster's majority boolean features")
    return cands[-1]


__all__ = ["representative", "original_representative", "majority", "NUMERIC_ORDER"]
