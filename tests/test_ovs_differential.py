"""Differential test: netsleuth's OpenFlow 1.0 forwarding against Open vSwitch.

Why: every tool in netsleuth trusts the flow-table model, and a real switch
is the cheapest independent judge of it.  Seeded random flow tables (exact
and wildcard matches, nw prefixes, several priorities, output / FLOOD / ALL
/ IN_PORT / CONTROLLER and set-field actions) and random packets (ARP, ICMP,
TCP, UDP, VLAN-tagged, non-IP) go to both netsleuth (``decide`` below) and a
sandboxed userspace OVS (``ofproto/trace``); the decisions must be equal.
The packet reaches OVS as netsleuth's wire bytes, so ``Packet.to_bytes`` and
``Packet.match_fields`` are checked too (OVS's parsed header values must
equal the 12-tuple).

Decision vocabulary (both sides normalized to it): either a table miss, or
the multiset of (OpenFlow port, header fields changed w.r.t. the input at
the moment of sending), with CONTROLLER as port 0xfffd.

Legitimate differences, avoided by construction (each is OVS behaviour that
OpenFlow 1.0 leaves open or that is an OVS extension):

1. Table miss.  OF1.0 sends a miss to the controller.  OVS does so only while
   a controller is connected; with fail_mode=secure and no controller its
   trace says "No match" and drops.  Both sides report "table miss".
2. LOCAL port.  OVS's FLOOD/ALL also reach the bridge's internal port
   (OFPP_LOCAL); netsleuth switches have no LOCAL port.  Outputs to LOCAL are
   dropped from OVS's decision.  Rules never output to LOCAL/NORMAL/TABLE
   (OVS extensions or not modelled) nor ENQUEUE (dummy ports have no queues).
3. Output order.  Copies sent to different ports are independent; OVS emits
   FLOOD/ALL ports in its own order.  Outputs are compared as a multiset.
4. Identical-priority overlaps are undefined in OF1.0: two wildcard rules of
   one priority are generated only when some field both match exactly has
   different values (provably disjoint).
5. Exact matches.  OF1.0 ranks an exact (no wildcard) entry above every
   wildcard entry; OVS implements this by installing it at priority 65535,
   so (a) wildcard rules use priorities 0..65534 and (b) a table holds each
   exact match once (OVS would merge two exact ADDs of different priority;
   netsleuth keeps both, as the 1.0 identity is match+priority).
6. Prerequisites.  OVS ignores nw_* fields unless dl_type is IPv4/ARP, tp_*
   unless nw_proto is TCP/UDP/ICMP, and nw_tos for ARP, and so does
   netsleuth's Match; rules here travel as ovs-ofctl text, which cannot
   carry such a field, so wildcard rules set only fields whose prerequisites
   they also set (tests/test_ovs_differential_pox.py sends the wire
   FLOW_MODs POX sends, with those fields fixed).  Exact rules are built
   from real packets, whose ignored fields are 0 on both sides (checked:
   every normalization OVS reports must only drop zero-valued fields).
7. VLAN PCP without a tag.  OVS ignores dl_vlan_pcp when dl_vlan=0xffff and
   reads a PCP with a wildcarded dl_vlan as "tagged"; netsleuth compares the
   12-tuple, where untagged frames have PCP 0.  PCP is matched only together
   with an exact VLAN id (exact rules from untagged packets carry PCP 0).
8. ICMP and mod_tp_src/dst.  OF1.0 defines them for TCP/UDP ports; OVS
   rewrites ICMP type/code.  Set-transport actions appear only in rules that
   match dl_type=0x0800 and nw_proto 6 or 17.
9. IPv4 protocol 0 and fragments.  OVS treats nw_proto 0 as "no L3 header"
   for rewrites; generated IPv4 packets use protocols 1/6/17, unfragmented.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass

import pytest
from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.model.actions import (
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
)
from netsleuth.model.addr import ip_to_int
from netsleuth.model.flowtable import FlowTable
from netsleuth.model.match import FIELDS, Match
from netsleuth.model.packet import ICMP, TCP, UDP, Arp, IPv4, Packet, Vlan, lldp_frame
from netsleuth.oracles.ovs import INSTALL_FIX, OvsNotInstalledError, OvsSandbox
from netsleuth.oracles.ovs_text import HEADER_FIELDS, OvsDecision, render_rule

SEED = 20_251_123
N_PORTS = 4
N_TABLES = 300
PACKETS_PER_TABLE = 22
MIN_CASES = 2_000

Changes = tuple[tuple[str, int], ...]


# --------------------------------------------------------------------- decisions
@dataclass(frozen=True)
class Decision:
    """A forwarding decision: a table miss, or the copies sent (sorted)."""

    table_miss: bool
    outputs: tuple[tuple[int, Changes], ...] = ()


_HEADER_INDEX = [(name, FIELDS.index(name)) for name in HEADER_FIELDS]


def header_state(packet: Packet, in_port: int) -> dict[str, int]:
    fields = packet.match_fields(in_port)
    return {name: fields[i] for name, i in _HEADER_INDEX}


from netsleuth.model.switch import Port, forward, port_hw_addr  # noqa: E402


def decide(table: FlowTable, packet: Packet, in_port: int, ports: list[int]) -> Decision:
    """OpenFlow 1.0 forwarding of ``packet`` arriving on ``in_port`` (switch ports ``ports``).

    Actions run in order; each output sends the packet as modified so far.
    FLOOD/ALL: every port but the input; IN_PORT: the input; a plain output
    to the input port or to a missing port sends nothing (1.0 requires
    IN_PORT to send back).
    """
    entry = table.peek(packet.match_fields(in_port))
    if entry is None:
        return Decision(table_miss=True)
    before = header_state(packet, in_port)
    sent: list[tuple[int, Changes]] = []
    # The switch model's own forwarding (switch.forward) is what is under test.
    switch_ports = {p: Port(p, port_hw_addr(1, p), f"p{p}") for p in ports}
    for port, out_pkt, _max_len in forward(entry.actions, packet, in_port, switch_ports):
        now = header_state(out_pkt, in_port)
        changes = tuple(sorted((k, v) for k, v in now.items() if v != before[k]))
        sent.append((port, changes))
    return Decision(False, tuple(sorted(sent)))


def from_ovs(d: OvsDecision) -> Decision:
    """OVS's decision in the same vocabulary (differences 1-3 of the docstring)."""
    if not d.matched:
        return Decision(table_miss=True)
    return Decision(False, tuple(sorted((o.port, o.changes) for o in d.outputs if o.port != ofp.OFPP_LOCAL)))


# --------------------------------------------------------------------- generators
MACS = [0x000000000001, 0x000000000002, 0x0000000000AA, 0x02AB00000003, 0xFFFFFFFFFFFF]
IPS = [ip_to_int(a) for a in ("10.0.0.1", "10.0.0.2", "10.0.1.7", "10.1.2.3", "192.168.1.1", "192.168.1.77")]
TP_PORTS = [22, 53, 80, 443, 5000]
ICMP_TC = [(8, 0), (0, 0), (3, 1), (11, 0)]
VIDS = [0, 1, 10, 100, 4095]
TOS = [0, 0x20, 0xB8, 0x21, 0xFC]  # 0x21: ECN bit set, must not matter
PREFIXES = [8, 16, 24, 32, 31, 1]


def random_packet(rng: random.Random) -> tuple[str, Packet]:
    kind = rng.choice(["arp", "icmp", "tcp", "udp", "nonip"])
    src, dst = rng.choice(MACS[:4]), rng.choice(MACS)
    vlan = Vlan(rng.choice(VIDS[1:4]), rng.randrange(8)) if rng.random() < 0.3 else None
    if kind == "arp":
        op = rng.choice([1, 2])
        arp = Arp(op, src, rng.choice(IPS), 0 if op == 1 else dst, rng.choice(IPS))
        pkt = Packet(src, dst, 0x0806, vlan, arp)
    elif kind == "nonip":
        if rng.random() < 0.5:
            pkt = lldp_frame(src, "chassis", rng.randint(1, 9))
            pkt = Packet(pkt.eth_src, pkt.eth_dst, pkt.eth_type, vlan, pkt.l3, payload=pkt.payload)
        else:
            pkt = Packet(src, dst, 0x88B5, vlan, payload=bytes(rng.randrange(256) for _ in range(30)))
    else:
        proto = {"icmp": 1, "tcp": 6, "udp": 17}[kind]
        if kind == "icmp":
            l4: ICMP | TCP | UDP = ICMP(*rng.choice(ICMP_TC), ident=rng.randrange(65536))
        elif kind == "tcp":
            l4 = TCP(rng.choice(TP_PORTS), rng.choice(TP_PORTS), flags=0x02)
        else:
            l4 = UDP(rng.choice(TP_PORTS), rng.choice(TP_PORTS))
        ip = IPv4(rng.choice(IPS), rng.choice(IPS), proto, tos=rng.choice(TOS))
        pkt = Packet(src, dst, 0x0800, vlan, ip, l4, payload=b"x" * rng.randrange(20))
    return (kind + ("+vlan" if vlan else "")), pkt


def random_wildcard_match(rng: random.Random) -> Match:
    f: dict[str, object] = {}
    if rng.random() < 0.3:
        f["in_port"] = rng.randint(1, N_PORTS)
    for name in ("dl_src", "dl_dst"):
        if rng.random() < 0.2:
            f[name] = rng.choice(MACS)
    if rng.random() < 0.25:
        f["dl_vlan"] = rng.choice([0xFFFF, 0xFFFF, *VIDS[1:4]])
        if f["dl_vlan"] != 0xFFFF and rng.random() < 0.4:  # difference 7
            f["dl_vlan_pcp"] = rng.randrange(8)
    dl_type = rng.choice([None, None, 0x0800, 0x0800, 0x0800, 0x0806, 0x88CC, 0x88B5])
    if dl_type is not None:
        f["dl_type"] = dl_type
    if dl_type in (0x0800, 0x0806):  # difference 6
        for name in ("nw_src", "nw_dst"):
            if rng.random() < 0.5:
                f[name] = (rng.choice(IPS), rng.choice(PREFIXES))
    if dl_type == 0x0806 and rng.random() < 0.4:
        f["nw_proto"] = rng.choice([1, 2])
    if dl_type == 0x0800:
        if rng.random() < 0.2:
            f["nw_tos"] = rng.choice(TOS) & 0xFC
        if rng.random() < 0.6:
            f["nw_proto"] = rng.choice([1, 6, 17])
            if f["nw_proto"] == 1:
                icmp_type, icmp_code = rng.choice(ICMP_TC)
                if rng.random() < 0.4:
                    f["tp_src"] = icmp_type
                if rng.random() < 0.3:
                    f["tp_dst"] = icmp_code
            else:
                for name in ("tp_src", "tp_dst"):
                    if rng.random() < 0.4:
                        f[name] = rng.choice(TP_PORTS)
    return Match.build(**f)


def random_actions(rng: random.Random, match: Match) -> list:
    tp_ok = match.masks[5] and match.values[5] == 0x0800 and match.masks[7] and match.values[7] in (6, 17)
    makers = [
        lambda: Output(rng.randint(1, N_PORTS)), lambda: Output(rng.randint(1, N_PORTS)),
        lambda: Output(N_PORTS + 1),  # no such port
        lambda: Output(ofp.OFPP_FLOOD), lambda: Output(ofp.OFPP_ALL), lambda: Output(ofp.OFPP_IN_PORT),
        lambda: Output(ofp.OFPP_CONTROLLER, rng.choice([128, 0xFFE5])),
        lambda: SetDlSrc(rng.choice(MACS)), lambda: SetDlDst(rng.choice(MACS)),
        lambda: SetVlanVid(rng.choice(VIDS)), lambda: SetVlanPcp(rng.randrange(8)), lambda: StripVlan(),
        lambda: SetNwSrc(rng.choice(IPS)), lambda: SetNwDst(rng.choice(IPS)),
        lambda: SetNwTos(rng.choice(TOS) & 0xFC),
    ]
    if tp_ok:  # difference 8
        makers += [lambda: SetTpSrc(rng.choice(TP_PORTS)), lambda: SetTpDst(rng.choice(TP_PORTS))]
    return [rng.choice(makers)() for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4, 5]))]


def surely_disjoint(a: Match, b: Match) -> bool:
    """Some field both match on has different values: no packet hits both."""
    for ma, va, mb, vb in zip(a.masks, a.values, b.masks, b.values, strict=True):
        common = ma & mb
        if common and (va & common) != (vb & common):
            return True
    return False


def random_table(rng: random.Random, seeds: list[tuple[int, Packet]]) -> list[tuple[Match, int, list]]:
    """Rules with differences 4-6 avoided; exact rules come from ``seeds`` (in_port, packet)."""
    rules: list[tuple[Match, int, list]] = []
    exact_seen: set[Match] = set()
    for _ in range(rng.randint(2, 12)):
        if rng.random() < 0.35:
            port, pkt = rng.choice(seeds)
            match = Match.exact(pkt.match_fields(port))
        else:
            match = random_wildcard_match(rng)
        if match.is_exact():
            if match in exact_seen:
                continue
            exact_seen.add(match)
            priority = rng.randint(0, 0xFFFF)
        else:
            priority = rng.choice([0, 10, 10, 100, 100, 1000, 65534])
            def clash(p: int, match: Match = match) -> bool:
                return any(not m.is_exact() and q == p and not surely_disjoint(m, match) for m, q, _ in rules)
            while clash(priority):
                priority = rng.randint(0, 0xFFFE)
        rules.append((match, priority, random_actions(rng, match)))
    return rules


def zero_only(norm) -> bool:
    """An OVS normalization that only dropped zero-valued fields (difference 6)."""
    dropped = set(norm.before.split(",")) - set(norm.after.split(","))
    return all(t.split("=", 1)[1] in ("0", "0.0.0.0") for t in dropped if "=" in t)


# --------------------------------------------------------------------- tests
@pytest.mark.real
@pytest.mark.slow
def test_netsleuth_forwards_like_ovs(tmp_path) -> None:
    rng = random.Random(SEED)
    ports = list(range(1, N_PORTS + 1))
    counts: Counter[str] = Counter()
    failures: list[str] = []
    started = time.monotonic()
    with OvsSandbox(tmp_path, ports=N_PORTS) as ovs:
        for _ in range(N_TABLES):
            pool = [random_packet(rng) for _ in range(PACKETS_PER_TABLE)]
            seeds = [(rng.randint(1, N_PORTS), pkt) for _, pkt in pool]
            rules = random_table(rng, seeds)
            table = FlowTable()
            for match, priority, actions in rules:
                table.add(match, priority, actions)
            for norm in ovs.replace_flows(rules):
                assert zero_only(norm), f"OVS changed a rule beyond difference 6: {norm}"
            for i, (kind, pkt) in enumerate(pool):
                # Half the packets enter where an exact rule may expect them.
                in_port = seeds[i][0] if rng.random() < 0.5 else rng.randint(1, N_PORTS)
                got = ovs.trace(in_port, pkt)
                expected = decide(table, pkt, in_port, ports)
                ovs_decision = from_ovs(got)
                counts["cases"] += 1
                counts["kind:" + kind] += 1
                counts["tagged" if pkt.vlan else "untagged"] += 1
                entry = table.peek(pkt.match_fields(in_port))
                counts["hit:" + ("miss" if entry is None else "exact" if entry.match.is_exact() else "wildcard")] += 1
                if entry is not None and entry.match.is_exact() and any(
                        not e.match.is_exact() and e.priority > entry.priority and
                            e.match.matches(pkt.match_fields(in_port))
                        for e in table.entries()):
                    counts["exact-outranks-higher-priority"] += 1
                for port, changes in expected.outputs:
                    name = {ofp.OFPP_CONTROLLER: "controller"}.get(port, "port")
                    counts["out:" + name] += 1
                    counts["out:modified" if changes else "out:unmodified"] += 1
                if entry is not None and not expected.outputs:
                    counts["drop"] += 1
                parsed_same = dict(got.initial) == header_state(pkt, in_port)
                # No controller: a miss must be a plain drop (the sandbox waits out ovs-ofctl).
                deterministic_miss = got.matched or not got.outputs
                if ovs_decision != expected or not parsed_same or not deterministic_miss:
                    failures.append(
                        f"packet {pkt.summary()} ({kind}) in_port={in_port} fields={pkt.match_fields(in_port)}\n"
                        f"  rules:\n    " + "\n    ".join(render_rule(*r) for r in rules) + "\n"
                        f"  netsleuth: {expected}\n  ovs:       {ovs_decision}\n"
                        f"  ovs parsed {dict(got.initial)} (same as netsleuth: {parsed_same})\n"
                        f"  trace:\n{got.trace_text}")
    elapsed = time.monotonic() - started
    print(f"\n{counts['cases']} cases in {elapsed:.1f}s; " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    assert not failures, f"{len(failures)} of {counts['cases']} cases disagree; first:\n" + "\n".join(failures[:3])
    assert counts["cases"] >= MIN_CASES
    for category in ("kind:arp", "kind:icmp", "kind:tcp", "kind:udp", "kind:nonip", "tagged",
                     "hit:miss", "hit:exact", "hit:wildcard", "exact-outranks-higher-priority",
                         "out:port", "out:controller", "out:modified", "drop"):
        assert counts[category] >= 50, f"too few cases of {category}: {counts[category]} (generator drifted)"


@pytest.mark.real
def test_sandboxes_run_concurrently_and_clean_up(tmp_path) -> None:
    with OvsSandbox(tmp_path, ports=2) as a, OvsSandbox(tmp_path, ports=3) as b:
        assert a.dir != b.dir
        a.replace_flows([(Match.catch_all(), 1, [Output(2)])])
        b.replace_flows([(Match.catch_all(), 1, [Output(3)])])
        pkt = random_packet(random.Random(1))[1]
        assert [o.port for o in a.trace(1, pkt).outputs] == [2]
        assert [o.port for o in b.trace(1, pkt).outputs] == [3]
        dirs = [a.dir, b.dir]
    assert not any(d.exists() for d in dirs)


def test_missing_binaries_raise_typed_error_with_fix(tmp_path) -> None:
    sandbox = OvsSandbox(tmp_path, search_path=str(tmp_path / "empty"))
    try:
        sandbox.start()
    except OvsNotInstalledError as exc:
        assert exc.fix == INSTALL_FIX and "ovs-vswitchd" in exc.problem
    else:
        sandbox.stop()
        raise AssertionError("OvsSandbox started without binaries")
