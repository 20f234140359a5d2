"""OpenFlow 1.0 flow-table semantics: flow_mod corners, lookup precedence, timeouts, canonical state."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from of10_fields import out, pkt
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as ofp_parser

from netsleuth.errors import NetsleuthError
from netsleuth.model.actions import (
    ActionError,
    Enqueue,
    Output,
    SetDlDst,
    SetDlSrc,
    SetNwDst,
    SetNwSrc,
    SetNwTos,
    SetTpDst,
    SetTpSrc,
    SetVlanPcp,
    SetVlanVid,
    StripVlan,
    action_from_json,
    action_from_ofp,
    action_to_json,
    action_to_ofp,
)
from netsleuth.model.addr import ip_to_int
from netsleuth.model.flowtable import FlowEntry, FlowOverlapError, FlowTable
from netsleuth.model.match import FIELDS, Match

IP = ip_to_int
B = Match.build


def TCP(**fields: object) -> Match:  # noqa: N802 - reads as the match's kind, like B
    """A match on TCP packets: network and transport fields count only with their prerequisites."""
    return B(dl_type=0x800, nw_proto=6, **fields)


def tcp_pkt(**fields: int) -> tuple[int, ...]:
    """The 12-tuple of a TCP packet."""
    return pkt(dl_type=0x800, nw_proto=6, **fields)
CHECK = ofp.OFPFF_CHECK_OVERLAP


def contents(t: FlowTable) -> list[tuple[Match, int, tuple]]:
    return [(e.match, e.priority, e.actions) for e in t.entries()]


# ---------------------------------------------------------------- ADD
def test_add_replaces_identical_match_and_priority_and_resets_counters() -> None:
    t = FlowTable()
    assert t.add(B(in_port=1), 10, out(2), cookie=7, now=1.0) is None
    t.lookup(pkt(in_port=1), now=2.0, nbytes=100)
    old = t.add(B(in_port=1), 10, out(3), cookie=8, now=5.0)
    assert old is not None and old.packet_count == 1 and old.actions == out(2)
    (e,) = t.entries()
    assert (e.actions, e.cookie, e.packet_count, e.byte_count, e.installed_at) == (out(3), 8, 0, 0, 5.0)


def test_same_match_different_priority_coexist() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 10, out(2))
    t.add(B(in_port=1), 20, out(3))
    assert len(t) == 2
    assert t.peek(pkt(in_port=1)).actions == out(3)


def test_check_overlap_refuses_same_priority_overlap() -> None:
    t = FlowTable()
    t.add(TCP(nw_dst="10.0.0.0/8"), 10, out(1))
    with pytest.raises(FlowOverlapError) as err:
        t.add(TCP(nw_dst="10.1.0.0/16", tp_dst=80), 10, out(2), flags=CHECK)
    assert err.value.err_type == ofp.OFPET_FLOW_MOD_FAILED and err.value.err_code == ofp.OFPFMFC_OVERLAP
    assert isinstance(err.value, NetsleuthError) and err.value.fix
    assert err.value.existing.match == TCP(nw_dst="10.0.0.0/8")
    assert len(t) == 1
    # identical match and priority is an overlap too
    with pytest.raises(FlowOverlapError):
        t.add(TCP(nw_dst="10.0.0.0/8"), 10, out(5), flags=CHECK)
    assert t.entries()[0].actions == out(1)


def test_check_overlap_allows_other_priority_or_disjoint_match() -> None:
    t = FlowTable()
    t.add(TCP(nw_dst="10.0.0.0/8"), 10, out(1))
    t.add(TCP(nw_dst="10.1.0.0/16"), 11, out(2), flags=CHECK)
    t.add(TCP(nw_dst="11.0.0.0/8"), 10, out(3), flags=CHECK)
    t.add(B(in_port=1), 10, out(4))  # overlapping but no flag: accepted
    assert len(t) == 4


# ---------------------------------------------------------------- MODIFY
def fill_for_modify() -> FlowTable:
    t = FlowTable()
    t.add(TCP(in_port=1, tp_dst=80), 10, out(2), cookie=1)
    t.add(TCP(in_port=1, tp_dst=22), 20, out(2), cookie=2)
    t.add(B(in_port=2), 10, out(3), cookie=3)
    t.add(Match.catch_all(), 0, out(ofp.OFPP_CONTROLLER), cookie=4)
    return t


def test_modify_non_strict_changes_every_covered_entry_keeping_counters() -> None:
    t = fill_for_modify()
    t.lookup(tcp_pkt(in_port=1, tp_dst=80), now=1.0, nbytes=60)
    changed = t.modify(B(in_port=1), out(9), strict=False, priority=99, now=2.0, cookie=42)
    assert sorted(e.priority for e in changed) == [10, 20]
    by_cookie = {e.match: e for e in t.entries()}
    hit = by_cookie[TCP(in_port=1, tp_dst=80)]
    assert hit.actions == out(9) and hit.cookie == 42 and hit.packet_count == 1 and hit.installed_at == 0.0
    assert by_cookie[B(in_port=2)].actions == out(3)          # not covered
    assert by_cookie[Match.catch_all()].actions == out(ofp.OFPP_CONTROLLER)  # more general: not covered


def test_modify_without_cookie_keeps_cookie() -> None:
    t = fill_for_modify()
    (e,) = t.modify(B(in_port=2), out(7), strict=False, now=0.0)
    assert e.cookie == 3 and e.actions == out(7)


def test_modify_strict_needs_identical_match_and_priority() -> None:
    t = fill_for_modify()
    assert t.modify(TCP(in_port=1, tp_dst=80), out(9), strict=True, priority=20, now=0.0) == []
    assert t.modify(B(in_port=1), out(9), strict=True, priority=10, now=0.0) == []
    (e,) = t.modify(TCP(in_port=1, tp_dst=80), out(9), strict=True, priority=10, now=0.0)
    assert e.actions == out(9)
    assert [x.actions for x in t.entries() if x.actions == out(9)] == [out(9)]


def test_modify_selecting_nothing_returns_empty_and_leaves_table() -> None:
    t = fill_for_modify()
    before = t.canonical_key()
    assert t.modify(B(in_port=5), out(9), strict=False, now=0.0) == []
    assert t.canonical_key() == before


# ---------------------------------------------------------------- DELETE
def test_delete_non_strict_removes_covered_entries_only() -> None:
    t = fill_for_modify()
    removed = t.delete(B(in_port=1), strict=False)
    assert {e.match for e in removed} == {TCP(in_port=1, tp_dst=80), TCP(in_port=1, tp_dst=22)}
    assert {e.match for e in t.entries()} == {B(in_port=2), Match.catch_all()}
    assert t.peek(tcp_pkt(in_port=1, tp_dst=80)).match == Match.catch_all()


def test_delete_catch_all_empties_the_table() -> None:
    t = fill_for_modify()
    assert len(t.delete(Match.catch_all(), strict=False)) == 4
    assert len(t) == 0 and t.peek(pkt()) is None


def test_delete_strict_needs_identical_match_and_priority() -> None:
    t = fill_for_modify()
    assert t.delete(B(in_port=2), strict=True, priority=11) == []
    assert t.delete(Match.catch_all(), strict=True, priority=10) == []
    (e,) = t.delete(B(in_port=2), strict=True, priority=10)
    assert e.cookie == 3 and len(t) == 3


def test_delete_filters_by_out_port() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 10, (SetDlSrc(5), Output(2)))
    t.add(B(in_port=2), 10, out(3))
    t.add(B(in_port=3), 10, (Enqueue(2, 1),))
    t.add(B(in_port=4), 10, ())
    removed = t.delete(Match.catch_all(), strict=False, out_port=2)
    assert {e.match for e in removed} == {B(in_port=1), B(in_port=3)}
    assert t.delete(B(in_port=2), strict=True, priority=10, out_port=4) == []
    assert len(t.delete(B(in_port=2), strict=True, priority=10, out_port=3)) == 1
    assert [e.match for e in t.entries()] == [B(in_port=4)]


def test_select_for_stats_is_non_strict_with_out_port() -> None:
    t = fill_for_modify()
    assert [e.cookie for e in t.select(B(in_port=1))] == [2, 1]
    assert [e.cookie for e in t.select(Match.catch_all(), ofp.OFPP_CONTROLLER)] == [4]
    assert len(t.select(Match.catch_all())) == 4 and len(t) == 4


# ---------------------------------------------------------------- lookup
def test_exact_entry_outranks_higher_priority_wildcard() -> None:
    t = FlowTable()
    f = pkt(in_port=1, dl_src=1, dl_dst=2, dl_type=0x800, nw_src=IP("10.0.0.1"), nw_dst=IP("10.0.0.2"))
    t.add(B(in_port=1), 0xFFFF, out(2))
    t.add(Match.exact(f), 0, out(3))
    assert t.peek(f).actions == out(3)
    assert t.peek(pkt(in_port=1)).actions == out(2)


def test_priority_decides_among_wildcards_and_prefixes() -> None:
    t = FlowTable()
    t.add(TCP(nw_dst="10.0.0.0/8"), 8, out(1))
    t.add(TCP(nw_dst="10.1.0.0/16"), 16, out(2))
    t.add(TCP(nw_dst="10.1.2.0/24"), 24, out(3))
    t.add(Match.catch_all(), 0, out(4))
    assert t.peek(tcp_pkt(nw_dst=IP("10.1.2.9"))).actions == out(3)
    assert t.peek(tcp_pkt(nw_dst=IP("10.1.3.9"))).actions == out(2)
    assert t.peek(tcp_pkt(nw_dst=IP("10.2.3.9"))).actions == out(1)
    assert t.peek(tcp_pkt(nw_dst=IP("11.0.0.1"))).actions == out(4)
    t.add(B(in_port=1), 100, out(5))
    assert t.peek(tcp_pkt(in_port=1, nw_dst=IP("10.1.2.9"))).actions == out(5)


def test_peek_action_id_names_the_actions_of_the_entry_peek_returns() -> None:
    from netsleuth.model.flowindex import actions_of
    t = FlowTable()
    t.add(TCP(nw_dst="10.0.0.0/8"), 8, out(1))
    t.add(TCP(nw_dst="10.1.0.0/16"), 16, out(2))
    t.add(B(in_port=1), 100, out(5))
    for f in (tcp_pkt(nw_dst=IP("10.1.2.9")), tcp_pkt(nw_dst=IP("10.2.3.9")),
              tcp_pkt(in_port=1, nw_dst=IP("10.1.2.9"))):
        aid = t.peek_action_id(f)
        assert aid is not None and actions_of(aid) == t.peek(f).actions
    assert t.peek_action_id(tcp_pkt(nw_dst=IP("11.0.0.1"))) is None and t.peek(tcp_pkt(nw_dst=IP("11.0.0.1"))) is None


def test_equal_priority_tie_is_independent_of_install_order() -> None:
    general, specific = B(in_port=1), TCP(in_port=1, tp_dst=80)
    f = tcp_pkt(in_port=1, tp_dst=80)
    winners = set()
    for order in ([general, specific], [specific, general]):
        t = FlowTable()
        for m in order:
            t.add(m, 10, out(1 if m == general else 2))
        winners.add(t.peek(f).match)
        assert t.peek(f) == t.entries()[0]  # lookup agrees with canonical order (entries are snapshots)
    assert winners == {specific}  # documented: the more specific match wins a tie


def test_lookup_counts_and_peek_does_not() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 10, out(2), now=0.0)
    assert t.peek(pkt(in_port=1)).packet_count == 0
    t.lookup(pkt(in_port=1), now=3.0, nbytes=64)
    e = t.lookup(pkt(in_port=1), now=4.0, nbytes=100)
    assert (e.packet_count, e.byte_count, e.last_used) == (2, 164, 4.0)
    assert t.lookup(pkt(in_port=2), now=5.0, nbytes=1) is None


def test_deleting_top_entry_falls_back_to_next() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 20, out(2))
    t.add(B(tp_dst=80), 10, out(3))
    t.add(TCP(in_port=1, tp_dst=80), 5, out(4))
    f = tcp_pkt(in_port=1, tp_dst=80)
    assert t.peek(f).actions == out(2)
    t.delete(B(in_port=1), strict=True, priority=20)
    assert t.peek(f).actions == out(3)
    t.delete(B(tp_dst=80), strict=True, priority=10)
    assert t.peek(f).actions == out(4)


# ---------------------------------------------------------------- timeouts
def test_idle_timeout_is_refreshed_by_traffic() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 10, out(2), idle_timeout=10, now=0.0)
    assert t.next_expiry() == 10.0
    t.lookup(pkt(in_port=1), now=8.0, nbytes=1)
    assert t.next_expiry() == 18.0
    assert t.expire(17.9) == []
    ((e, reason),) = t.expire(18.0)
    assert reason == ofp.OFPRR_IDLE_TIMEOUT and e.packet_count == 1
    assert len(t) == 0 and t.next_expiry() is None


def test_hard_timeout_ignores_traffic() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 10, out(2), hard_timeout=5, now=1.0)
    for now in (2.0, 3.0, 5.9):
        t.lookup(pkt(in_port=1), now=now, nbytes=1)
    assert t.next_expiry() == 6.0
    ((_, reason),) = t.expire(6.0)
    assert reason == ofp.OFPRR_HARD_TIMEOUT


def test_idle_and_hard_the_earlier_deadline_gives_the_reason() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 1, (), idle_timeout=3, hard_timeout=10, now=0.0)
    t.add(B(in_port=2), 1, (), idle_timeout=10, hard_timeout=4, now=0.0)
    t.add(B(in_port=3), 1, (), now=0.0)  # permanent
    assert t.next_expiry() == 3.0
    reasons = [(e.match, r) for e, r in t.expire(100.0)]
    assert reasons == [(B(in_port=1), ofp.OFPRR_IDLE_TIMEOUT), (B(in_port=2), ofp.OFPRR_HARD_TIMEOUT)]
    assert [e.match for e in t.entries()] == [B(in_port=3)] and t.next_expiry() is None


def test_modify_does_not_restart_timers() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 1, out(1), hard_timeout=5, now=0.0)
    t.modify(B(in_port=1), out(2), strict=True, priority=1, now=4.0)
    assert t.next_expiry() == 5.0


def test_lookup_never_expires_by_itself() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 1, out(1), hard_timeout=1, now=0.0)
    assert t.lookup(pkt(in_port=1), now=50.0, nbytes=1) is not None


# ---------------------------------------------------------------- canonical state
def random_flows(rng: random.Random, n: int) -> list[tuple[Match, int, tuple]]:
    flows = {}
    while len(flows) < n:
        m = TCP(in_port=rng.randint(1, 4), tp_dst=rng.choice([22, 80, 443]),
              nw_dst=(rng.choice([IP("10.0.0.0"), IP("10.1.0.0")]), rng.choice([8, 16, 32])))
        flows[(m, rng.randint(0, 3))] = out(rng.randint(1, 4))
    return [(m, p, a) for (m, p), a in flows.items()]


def test_canonical_key_is_independent_of_install_order() -> None:
    rng = random.Random(7)
    flows = random_flows(rng, 30)
    t1, t2 = FlowTable(), FlowTable()
    for m, p, a in flows:
        t1.add(m, p, a, idle_timeout=5)
    shuffled = flows[:]
    rng.shuffle(shuffled)
    for m, p, a in shuffled:
        t2.add(m, p, a, idle_timeout=5)
    assert t1.canonical_key() == t2.canonical_key() and hash(t1.canonical_key()) == hash(t2.canonical_key())
    assert contents(t1) == contents(t2)
    f = tcp_pkt(in_port=1, tp_dst=80, nw_dst=IP("10.0.0.0"))
    t1.lookup(f, now=1.0, nbytes=10)
    assert t1.canonical_key() != t2.canonical_key()
    t2.lookup(f, now=1.0, nbytes=99)
    assert t1.canonical_key() != t2.canonical_key()
    assert t1.canonical_key(with_counters=False) == t2.canonical_key(with_counters=False)


def test_copy_is_independent() -> None:
    t = fill_for_modify()
    c = t.copy()
    assert c.canonical_key() == t.canonical_key()
    c.lookup(pkt(in_port=2), now=1.0, nbytes=5)
    c.delete(B(in_port=1), strict=False)
    assert len(t) == 4 and t.peek(pkt(in_port=2)).packet_count == 0


def test_entries_order_and_json_round_trip() -> None:
    t = fill_for_modify()
    f = pkt(in_port=1, dl_src=1, dl_dst=2)
    t.add(Match.exact(f), 1, (SetNwSrc("10.0.0.9"), Output(2)))
    es = t.entries()
    assert es[0].match.is_exact()
    assert [e.priority for e in es[1:]] == sorted((e.priority for e in es[1:]), reverse=True)
    for e in es:
        assert FlowEntry.from_json(e.to_json()) == e
    assert str(es[0]).endswith("actions=mod_nw_src:10.0.0.9,output:2")


# ---------------------------------------------------------------- property: lookup vs brute force
DOMAIN = {"in_port": [1, 2], "dl_type": [0x800, 0x806], "nw_proto": [6, 17], "tp_dst": [22, 80]}
ADDRS = [IP("10.0.0.1"), IP("10.0.1.1"), IP("10.128.0.1"), IP("11.0.0.1")]
flow_match = st.builds(
    lambda fields, src, dst: Match.build(**fields, **src, **dst),
    st.fixed_dictionaries({}, optional={k: st.sampled_from(v) for k, v in DOMAIN.items()}),
    st.fixed_dictionaries({}, optional={"nw_src": st.tuples(st.sampled_from(ADDRS),
                                                            st.sampled_from([0, 8, 16, 24, 32]))}),
    st.fixed_dictionaries({}, optional={"nw_dst": st.tuples(st.sampled_from(ADDRS), st.sampled_from([8, 17, 32]))}),
)
probe = st.builds(lambda d, s, t: pkt(**d, nw_src=s, nw_dst=t),
                  st.fixed_dictionaries({k: st.sampled_from(v) for k, v in DOMAIN.items()}),
                  st.sampled_from(ADDRS), st.sampled_from(ADDRS))
ops = st.lists(st.one_of(
    st.tuples(st.just("add"), flow_match, st.integers(0, 3), st.integers(1, 4)),
    st.tuples(st.just("exact"), probe, st.integers(0, 3), st.integers(1, 4)),
    st.tuples(st.just("delete"), flow_match, st.integers(0, 3), st.booleans()),
), max_size=25)


def ref_matches(m: Match, f: tuple[int, ...]) -> bool:
    for i, name in enumerate(FIELDS):
        if name in ("nw_src", "nw_dst"):
            shift = ofp.OFPFW_NW_SRC_SHIFT if name == "nw_src" else ofp.OFPFW_NW_DST_SHIFT
            n = min((m.wildcards >> shift) & 0x3F, 32)
            if n < 32 and f[i] >> n != getattr(m, name) >> n:
                return False
        elif not m.wildcards & getattr(ofp, "OFPFW_" + name.upper()) and f[i] != getattr(m, name):
            return False
    return True


def ref_covers(a: Match, b: Match) -> bool:
    """Spec reading: a wildcards every field b wildcards, agrees where a is exact, prefixes nest."""
    for name in FIELDS:
        if name in ("nw_src", "nw_dst"):
            shift = ofp.OFPFW_NW_SRC_SHIFT if name == "nw_src" else ofp.OFPFW_NW_DST_SHIFT
            na, nb = (min((x.wildcards >> shift) & 0x3F, 32) for x in (a, b))
            if na < nb or (na < 32 and getattr(a, name) >> na != getattr(b, name) >> na):
                return False
        else:
            bit = getattr(ofp, "OFPFW_" + name.upper())
            if not a.wildcards & bit and (b.wildcards & bit or getattr(a, name) != getattr(b, name)):
                return False
    return True


PROBES = [pkt(in_port=i, dl_type=d, nw_proto=p, tp_dst=t, nw_src=s, nw_dst=x)
          for i in DOMAIN["in_port"] for d in DOMAIN["dl_type"] for p in DOMAIN["nw_proto"]
          for t in DOMAIN["tp_dst"] for s in ADDRS for x in ADDRS]


@settings(max_examples=150, deadline=None)
@given(ops)
def test_lookup_and_flow_mods_agree_with_brute_force(script: list[tuple]) -> None:
    t = FlowTable()
    ref: dict[tuple[Match, int], tuple] = {}  # (match, priority) -> actions
    for op, m, prio, arg in script:
        if op == "exact":
            m = Match.exact(m)
        if op in ("add", "exact"):
            t.add(m, prio, out(arg))
            ref[(m, prio)] = out(arg)
        elif arg:  # strict delete
            t.delete(m, strict=True, priority=prio)
            ref.pop((m, prio), None)
        else:
            t.delete(m, strict=False)
            ref = {k: v for k, v in ref.items() if not ref_covers(m, k[0])}
    assert sorted(contents(t), key=repr) == sorted(((m, p, a) for (m, p), a in ref.items()), key=repr)
    for f in PROBES:
        hits = [(m, p) for (m, p) in ref if ref_matches(m, f)]
        got = t.peek(f)
        if not hits:
            assert got is None
            continue
        exact = [h for h in hits if h[0].wildcards == 0]
        pool = exact or hits
        top = max(p for _, p in pool)
        pool = [h for h in pool if h[1] == top]
        most = max(sum(mask.bit_count() for mask in h[0].masks) for h in pool)
        pool = [h for h in pool if sum(mask.bit_count() for mask in h[0].masks) == most]
        best = min(pool, key=lambda h: h[0].sort_key())
        assert got is not None and (got.match, got.priority) == best


# ---------------------------------------------------------------- actions <-> os-ken / JSON
ALL_ACTIONS = [Output(3), Output(ofp.OFPP_CONTROLLER, 128), SetVlanVid(100), SetVlanPcp(5), StripVlan(),
               SetDlSrc("aa:bb:cc:dd:ee:ff"), SetDlDst(2), SetNwSrc("10.0.0.1"), SetNwDst(IP("10.0.0.2")),
               SetNwTos(0x28), SetTpSrc(1234), SetTpDst(80), Enqueue(2, 7)]


@pytest.mark.parametrize("action", ALL_ACTIONS, ids=str)
def test_action_round_trips(action: object) -> None:
    o = action_to_ofp(action)
    buf = bytearray(o.len)
    o.serialize(buf, 0)
    assert action_from_ofp(ofp_parser.OFPAction.parser(bytes(buf), 0)) == action
    assert action_from_json(action_to_json(action)) == action


def test_set_dl_src_from_os_ken_bytes_is_an_int() -> None:
    a = action_from_ofp(ofp_parser.OFPActionSetDlSrc("aa:bb:cc:dd:ee:ff"))
    assert a == SetDlSrc(0xAABBCCDDEEFF) and str(a) == "mod_dl_src:aa:bb:cc:dd:ee:ff"


@pytest.mark.parametrize("bad", [lambda: SetVlanVid(0x1000), lambda: SetVlanPcp(8), lambda: SetNwTos(0x29),
                                 lambda: Output(0x10000), lambda: SetDlSrc("zz")])
def test_bad_action_arguments_raise_with_code(bad) -> None:
    with pytest.raises(ActionError) as err:
        bad()
    assert err.value.err_type == ofp.OFPET_BAD_ACTION and err.value.err_code == ofp.OFPBAC_BAD_ARGUMENT
    assert err.value.fix


# ---------------------------------------------------------------- columnar storage
# The table keeps entries in columns (FlowTable.pattern_index) and hands out FlowEntry
# snapshots; what used to be identity is the entry's serial, and every change goes
# through the table.

def test_entries_are_snapshots_and_serials_follow_installations() -> None:
    t = FlowTable()
    t.add(B(in_port=1, dl_dst=0xB), 5, out(2), now=1.0)
    first = t.entries()[0]
    with pytest.raises(AttributeError):
        first.packet_count = 9  # type: ignore[misc]  # frozen: changes go through the table
    t.lookup(pkt(in_port=1, dl_dst=0xB), now=2.0, nbytes=60)
    assert first.packet_count == 0  # the snapshot did not change
    now = t.entries()[0]
    assert (now.packet_count, now.byte_count, now.last_used) == (1, 60, 2.0) and now.serial == first.serial
    t.modify(B(in_port=1, dl_dst=0xB), out(3), strict=True, priority=5)
    assert t.entries()[0].serial == first.serial and t.entries()[0].actions == out(3)
    t.add(B(in_port=1, dl_dst=0xB), 5, out(3), now=3.0)  # replaces: a new installation
    assert t.entries()[0].serial != first.serial and t.entries()[0].packet_count == 0
    t.refresh(t.entries()[0], 7.0)
    assert t.entries()[0].last_used == 7.0
    t.refresh(t.entries()[0], 6.0)  # an older use never moves the idle timer back
    assert t.entries()[0].last_used == 7.0


def test_copy_is_independent_of_modify_and_add() -> None:
    t = FlowTable()
    t.add(B(in_port=1), 5, out(2), cookie=4, idle_timeout=10)
    c = t.copy()
    c.modify(B(in_port=1), out(3), strict=False)
    c.lookup(pkt(in_port=1), now=1.0, nbytes=10)
    c.add(B(in_port=2), 1, out(1))
    assert contents(t) == [(B(in_port=1), 5, out(2))] and t.entries()[0].packet_count == 0
    assert len(c) == 2 and c.entries()[0].actions == out(3) and c.entries()[0].cookie == 4


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([B(in_port=1), B(in_port=1, dl_dst=0xB), B(dl_dst=0xB),
                                           Match.exact(pkt(in_port=2)), B(in_port=2, dl_src=0xA)]),
                          st.sampled_from([0, 1, 7]), st.sampled_from([1, 2, 3])), max_size=30))
def test_add_many_is_repeated_add(flows) -> None:
    one, bulk = FlowTable(), FlowTable()
    for m, prio, port in flows:
        one.add(m, prio, out(port), now=2.0)
    assert bulk.add_many(((m, prio, out(port)) for m, prio, port in flows), now=2.0) == len(flows)
    assert one.canonical_key() == bulk.canonical_key() and len(one) == len(bulk)
    for f in (pkt(in_port=1, dl_dst=0xB), pkt(in_port=2), pkt(in_port=2, dl_src=0xA, dl_dst=0xB)):
        assert one.peek(f) == bulk.peek(f)


def test_slot_map_agrees_with_a_dict_through_merges(monkeypatch) -> None:
    """SlotMap (a big pattern's key id -> slot, sorted arrays plus a dict of recent
    additions) answers as a dict would under random additions, updates and removals,
    across many merges (a tiny merge threshold forces them)."""
    from netsleuth.model.flowtable import SlotMap

    monkeypatch.setattr(SlotMap, "COMPACT_MIN", 3)
    rng = random.Random(7)
    m, d = SlotMap(), {}
    for step in range(4000):
        kid = rng.randrange(300)
        op = rng.random()
        if op < 0.55:
            d[kid] = m_s = rng.randrange(1, 10_000)
            m[kid] = m_s
        elif kid in d:
            del d[kid]
            del m[kid]
        else:
            with pytest.raises(KeyError):
                del m[kid]
        probe = rng.randrange(300)
        assert m.get(probe) == d.get(probe) and (probe in m) == (probe in d)
        assert len(m) == len(d)
        if step % 97 == 0:
            assert dict(m.items()) == d and sorted(m) == sorted(d)
            c = m.copy()
            c[probe] = 1
            assert m.get(probe) == d.get(probe)
    k, s = m.arrays()
    assert dict(zip(k.tolist(), s.tolist(), strict=True)) == d and list(k) == sorted(k)
