"""`netsleuth invariants TRACE`: check invariants on a recorded trace.

The state is rebuilt from what the switches received and the inputs (see
world/rebuild.py), at the end of the trace or at a chosen event, and the same
registered invariants that run on a live network are checked on it.
"""

from __future__ import annotations

from pathlib import Path

from netsleuth.invariants import registry
from netsleuth.invariants.policy.faucet import load_faucet_policy
from netsleuth.invariants.policy.isolation import load_isolation
from netsleuth.trace.io import read_trace
from netsleuth.world.rebuild import rebuild


def invariants_on_trace(path: str | Path, checks: str | None = None, at: int | None = None,
                isolation: Path | None = None, faucet_policy: Path | None = None) -> dict:
    trace = read_trace(path)
    invariants = [i for i in registry.resolve(checks) if i.name != "dataplane-loops"]
    stop = (lambda e: e.seq > at) if at is not None else None
    rebuilt = rebuild(trace.header, trace.events, stop)
    world = rebuilt.world
    if isolation:
        world.isolation = load_isolation(isolation, world.topology)
    if faucet_policy:
        world.faucet_policy = load_faucet_policy(faucet_policy, world.topology)
    findings = registry.check(world.view(), [i for i in invariants if i.name != "delivery"])
    return {
        "trace": str(path), "at_seq": rebuilt.last_seq, "events_applied": rebuilt.applied,
        "checks": [i.name for i in invariants],
        "flow_entries": {name: s.flow_count for name, s in world.switches.items()},
        "violations": [{"invariant": f.invariant, "message": f.message, "hosts": list(f.hosts),
                        "switches": list(f.switches), "details": f.details} for f in findings],
    }
