"""Bug signatures from hand-built violations: one bucket per bug, never one for two bugs.

A campaign groups its runs by :class:`Signature.id`, so the id must keep apart
what tells two bugs apart (the invariant, why the packets die, the rule's
shape, the kind of headers) and forget what differs between two recordings of
one bug (addresses, priorities, sequence numbers, names).  The network state a
signature reads is rebuilt from the same hand-built trace, so these tests run
the real rebuild on a real topology with no controller.
"""

from __future__ import annotations

from netsleuth.campaign.signature import Signature, _StateAt, job_bug, signature_of
from netsleuth.model.topo_builders import parse_topo
from netsleuth.trace import schema as ts

H1, H2, H3 = "00:00:00:00:00:01", "00:00:00:00:00:02", "00:00:00:00:00:03"


def _header(spec: str = "linear,3") -> ts.TraceHeader:
    return ts.TraceHeader(topology=parse_topo(spec).to_json(), topology_spec=spec, controller="osken:x",
                          seed=1, tool_version="test")


def _rule(match: str, out: int, priority: int = 1) -> str:
    return f"rule {match} priority {priority} actions=output:{out}"


def _hole(seq: int, where: str, why: list[str], dst: str = H2, invariant: str = "blackholes",
          round_: int = 3) -> ts.Violation:
    details: dict = {"where": where, "why": why, "witness": {"dl_dst": dst}, "round": round_}
    if invariant == "reachability":
        details = {"dropped_at": where, "why": why, "witness": {"dl_dst": dst}, "round": round_}
    return ts.Violation(seq=seq, t=float(seq), invariant=invariant, message=f"traffic dropped at {where}",
                        persistent=True, hosts=("h1", "h2"), switches=(where,), details=details)


def _sig(events: list[ts.Event], v: ts.Violation, spec: str = "linear,3") -> Signature:
    return signature_of(v, _StateAt(_header(spec), events))


def _moved(seq: int = 1) -> ts.HostMigration:
    # h3 leaves s3 port 1 for s1 (linear,3: host hK on switch sK port 1)
    return ts.HostMigration(seq=seq, t=0.5, id="i1", host="h3", old_switch="s3", old_port=1,
                            new_switch="s1", new_port=3)


def _failed(seq: int = 1) -> ts.LinkFailure:
    return ts.LinkFailure(seq=seq, t=0.5, id="i1", node1="s2", port1=3, node2="s3", port2=2)


def test_the_invariant_is_part_of_the_bucket() -> None:
    """A blackhole and a reachability finding with the very same parts are two bugs."""
    why = [_rule(f"in_port=2,dl_src={H1},dl_dst={H3}", 1)]
    events: list[ts.Event] = [_moved()]
    hole = _sig(events, _hole(5, "s3", why))
    cut = _sig(events, _hole(5, "s3", why, invariant="reachability"))
    assert hole.parts == cut.parts, (hole.parts, cut.parts)
    assert hole.id != cut.id


def test_one_bug_recorded_twice_is_one_bucket() -> None:
    """Other addresses, another priority, other sequence numbers: the same migration blackhole."""
    a = _sig([_moved(1)], _hole(5, "s3", [_rule(f"in_port=2,dl_src={H1},dl_dst={H3}", 1, priority=1)]))
    b = _sig([_moved(2)], _hole(9, "s3", [_rule(f"in_port=3,dl_src={H2},dl_dst={H3}", 1, priority=7)], dst=H3))
    assert a.id == b.id, (a.text, b.text)
    assert a.to_json()["parts"]["cause"] == "the rule outputs to a port a host left"
    assert a.to_json()["parts"]["inputs"] == "host_migration"


def test_distinct_causes_are_distinct_buckets() -> None:
    """The same rule shape dropping into a port a host left, a failed link, or nothing at all."""
    left = _sig([_moved()], _hole(5, "s3", [_rule(f"in_port=2,dl_src={H1},dl_dst={H3}", 1)]))
    link = _sig([_failed()], _hole(5, "s2", [_rule(f"in_port=2,dl_src={H1},dl_dst={H3}", 3)]))
    empty = _sig([], _hole(5, "s3", [_rule(f"in_port=2,dl_src={H1},dl_dst={H3}", 7)]))
    causes = [s.to_json()["parts"]["cause"] for s in (left, link, empty)]
    assert causes == ["the rule outputs to a port a host left", "the rule outputs to a port whose link failed",
                      "the rule outputs to a port with nothing attached"]
    assert len({left.id, link.id, empty.id}) == 3


def test_distinct_rule_shapes_and_header_classes_are_distinct_buckets() -> None:
    full = _sig([_moved()], _hole(5, "s3", [_rule(f"in_port=2,dl_src={H1},dl_dst={H3}", 1)]))
    dst_only = _sig([_moved()], _hole(5, "s3", [_rule(f"dl_dst={H3}", 1)]))
    broadcast = _sig([_moved()], _hole(5, "s3", [_rule(f"in_port=2,dl_src={H1},dl_dst={H3}", 1)],
                                       dst="ff:ff:ff:ff:ff:ff"))
    assert full.to_json()["parts"]["rule"] == "a rule matching in_port,dl_src,dl_dst"
    assert dst_only.to_json()["parts"]["rule"] == "a rule matching dl_dst"
    assert broadcast.to_json()["parts"]["headers"] == "broadcast"
    assert len({full.id, dst_only.id, broadcast.id}) == 3


def test_other_invariants_forget_names_but_not_the_invariant() -> None:
    def v(invariant: str, message: str) -> ts.Violation:
        return ts.Violation(seq=4, t=1.0, invariant=invariant, message=message, persistent=True, hosts=(),
                            switches=(), details={})

    a = _sig([], v("liveness", "s1 (dpid 1) is not connected to a controller"))
    b = _sig([], v("liveness", "s3 (dpid 3) is not connected to a controller"))
    c = _sig([], v("delivery", "s1 (dpid 1) is not connected to a controller"))
    assert a.id == b.id
    assert a.id != c.id


def test_a_run_s_bug_is_its_first_round_s_best_explanation() -> None:
    """A loop outranks the blackhole and the unreachable pair recorded in the same round; a later round
    does not count."""
    loop = ts.Violation(seq=7, t=2.0, invariant="loops", message="traffic loops s1 -> s2 -> s1", persistent=True,
                        hosts=(), switches=("s1", "s2"), details={"path": ["s1:2", "s2:2", "s1:2"], "round": 3})
    later = ts.Violation(seq=9, t=3.0, invariant="liveness", message="s1 is not connected", persistent=True,
                         hosts=(), switches=("s1",), details={"round": 4})
    why = [_rule(f"in_port=2,dl_src={H1},dl_dst={H3}", 1)]
    events: list[ts.Event] = [_moved(), _hole(5, "s3", why), _hole(6, "s3", why, invariant="reachability"),
                              loop, later]
    bug = job_bug(_header(), events)
    assert bug is not None
    assert bug.signature.invariant == "loops"
    assert bug.violation_index == 2
    assert sorted(s.invariant for s in bug.others) == ["blackholes", "reachability"]
    assert job_bug(_header(), [_moved()]) is None
