"""`netsleuth check --discover`: packets found by concolic execution drive the search.

With no scripted traffic at all, the hosts of pyswitch's scenarios send only
what discover_packets finds in the app's packet_in handler, and that is enough
to reach BUG-II and BUG-I; the counterexamples carry the discovered packets and
replay deterministically.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netsleuth.nice.job import CheckOptions, check, replay_counterexample
from netsleuth.trace.io import read_trace


@pytest.mark.parametrize("scenario,prop,frames", [("direct", "StrictDirectPaths", 2),
                                                  ("mobile", "NoBlackHolesMobile", 1)])
def test_discovered_packets_alone_reach_the_bug(scenario: str, prop: str, frames: int, tmp_path: Path) -> None:
    base = dict(app="pyswitch", scenario=scenario, pings=0, strategy="pkt-seq", stop_at_first=True)
    silent = check(CheckOptions(**base))
    assert silent["violations"] == [] and silent["completed"]   # no traffic, nothing to find

    d = check(CheckOptions(**base, discover=frames, out=tmp_path))
    assert d["violation_counts"].get(prop) == 1
    (cex,) = sorted(tmp_path.glob(f"cex-*-{prop}.jsonl"))
    trace = read_trace(cex)
    assert any(e.kind == "mc_step" and e.transition["kind"] == "sendpkt" for e in trace.events)
    again = replay_counterexample(trace, times=2)
    assert again["reproduced"] is True and again["reproduction_rate"] == 1.0
