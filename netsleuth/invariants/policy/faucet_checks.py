"""The ``isolation`` and ``acl`` invariants of a Faucet network, decided by header-space analysis.

The policy comes from the Faucet config the run used (``view.faucet``, see
:mod:`netsleuth.invariants.policy.faucet`); what the network does comes from
the 1.3 pipelines Faucet installed, pushed through with
:func:`~netsleuth.invariants.headerspace.of13.engine.analyze13` (every header a host can
send, from every host port; the analysis is shared with loops, blackholes
and reachability when those run on the same tables). Findings speak
Faucet's language: VLAN names, ACL names and rule indexes.

* isolation: a host whose port is natively in VLAN A must not get any header
  delivered to a host natively in VLAN B != A, unless a ``routers:`` entry
  joins A and B. Only deliveries through the tables count: Faucet learns from
  packet-ins but does not forward data packets itself.
* acl: for every port with ``acls_in`` and every rule of its ACLs in order
  (first match wins, so each rule judges only the headers no earlier rule
  took), with the port's host as sender: a rule that denies must leave its
  headers undelivered to every host; a rule that allows must get its
  headers to every other host in the sender's VLAN. What an allow rule is
  held to is the traffic hosts really send each other (untagged, the pair's
  MACs, IPv4 between their addresses or ARP), not every header it matches:
  Faucet drops some header classes on purpose whatever the ACL says; and
  not at all when the sender's VLAN has ACLs of its own, which may drop it.
"""

from __future__ import annotations

from collections.abc import Iterable

from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace.of13.engine import Analysis13, HsaEvent13, Reach13, analyze13, has_of13
from netsleuth.invariants.headerspace.of13.space import HS13, describe13, header_dict13, union13
from netsleuth.invariants.policy.faucet import AclRule, FaucetPolicy
from netsleuth.invariants.view import NetworkView
from netsleuth.model.of13.headerbits import UNTAGGED, wc13
from netsleuth.model.topology import HostSpec


def _policy_and_analysis(view: NetworkView, analysis: object) -> tuple[FaucetPolicy, Analysis13] | None:
    policy = getattr(view, "faucet", None)
    if not isinstance(policy, FaucetPolicy) or not has_of13(view):
        return None
    if isinstance(analysis, Analysis13) and analysis.view is view:
        return policy, analysis
    return policy, analyze13(view)


def host_vlans(view: NetworkView, policy: FaucetPolicy) -> dict[str, str]:
    """host -> the native VLAN of the port it is plugged into now (hosts on unconfigured ports are left out)."""
    out = {}
    for h in view.topology.hosts:
        vlan = policy.vlan_at(*view.host_location(h.name))
        if vlan is not None:
            out[h.name] = vlan
    return out


def _path_text(e: HsaEvent13, dst: tuple[str, int]) -> str:
    hops = [f"{s}:{p}" for s, p in e.path] + [f"{dst[0]}:{dst[1]}"]
    return " -> ".join(hops)


def _witness(hs: HS13) -> dict[str, object] | None:
    w = hs.witness()
    return None if w is None else header_dict13(w)


def _narrow(hs: HS13, src: HostSpec, dst: HostSpec) -> HS13:
    """``hs`` cut down to the pair's own traffic when it holds some: the example a finding shows."""
    for narrow in (wc13(eth_src=src.mac, eth_dst=dst.mac, eth_type=0x0800), wc13(eth_src=src.mac, eth_dst=dst.mac),
                   wc13(eth_src=src.mac)):
        part = hs.intersect_wc(narrow).prune()
        if part.terms:
            return part
    return hs


def _example(hs: HS13, src: HostSpec, dst: HostSpec) -> str:
    """One header of ``hs`` in a few words (the whole space is in the finding's details)."""
    fields = _witness(_narrow(hs, src, dst)) or {}
    parts = [f"{k}={v:#06x}" if k == "eth_type" and isinstance(v, int) else f"{k}={v}" for k, v in fields.items()]
    return ",".join(parts)


def _event_of(events: list[HsaEvent13], hs: HS13, src: HostSpec, dst: HostSpec) -> HsaEvent13:
    """The event that carries the finding's example header (its path is the one shown)."""
    w = _narrow(hs, src, dst).witness()
    return next((e for e in events if w is not None and e.hs.contains(w)), events[0])


def _union(events: Iterable[HsaEvent13]) -> HS13:
    return union13(e.hs for e in events).prune()


# --------------------------------------------------------------------------- isolation
def check_vlan_isolation(view: NetworkView, analysis: object = None) -> list[Finding]:
    got = _policy_and_analysis(view, analysis)
    if got is None:
        return []
    policy, a = got
    vlans = host_vlans(view, policy)
    out = []
    for src in view.topology.hosts:
        vs = vlans.get(src.name)
        r = a.reaches.get(view.host_location(src.name))
        if vs is None or r is None:
            continue
        for dst in view.topology.hosts:
            vd = vlans.get(dst.name)
            events = r.delivered.get(dst.name, [])
            if vd is None or vd == vs or policy.routes(vs, vd) or not events:
                continue
            hs = _union(events)
            if not hs.terms:
                continue
            e = _event_of(events, hs, src, dst)
            path = _path_text(e, view.host_location(dst.name))
            out.append(Finding(
                "isolation", f"{src.name} (vlan {vs}) reaches {dst.name} (vlan {vd}) over {path}, and no router "
                             f"joins the two VLANs (e.g. {_example(hs, src, dst)})",
                hosts=(src.name, dst.name), switches=tuple(dict.fromkeys(s for s, _p in e.path)),
                details={"src_vlan": vs, "dst_vlan": vd, "path": path, "header_space": describe13(hs),
                         "rules": list(e.rule_texts()), "witness": _witness(hs)}))
    return out


# --------------------------------------------------------------------------- acl
def host_traffic(src: HostSpec, dst: HostSpec) -> HS13:
    """What hosts send each other in practice: untagged, their MACs, IPv4 between their addresses or ARP."""
    pair = HS13.injected().intersect_wc(UNTAGGED).intersect_wc(wc13(eth_src=src.mac, eth_dst=dst.mac))
    ip = pair.intersect_wc(wc13(eth_type=0x0800, ipv4_src=src.ip, ipv4_dst=dst.ip))
    arp = pair.intersect_wc(wc13(eth_type=0x0806, arp_spa=src.ip, arp_tpa=dst.ip))
    return (ip | arp).prune()


def _rule_space(rule: AclRule, earlier: list[tuple[int, int]]) -> HS13:
    assert rule.wc is not None
    hs = HS13.injected().intersect_wc(rule.wc)
    for w in earlier:
        hs = hs.minus_wc(w)
    return hs.prune()


def _where(rule: AclRule, sw: str, port: int) -> str:
    return f'rule {rule.index} of acl "{rule.acl}" on {sw} port {port}'


def _drop_text(events: list[HsaEvent13], h: int) -> str:
    for e in events:
        if e.hs.contains(h):
            return f"dropped at {e.where} ({e.why})"
    return "not delivered"


def check_acls(view: NetworkView, analysis: object = None) -> list[Finding]:
    got = _policy_and_analysis(view, analysis)
    if got is None:
        return []
    policy, a = got
    vlans = host_vlans(view, policy)
    out: list[Finding] = []
    for (sw, port), pp in policy.ports.items():
        senders = [h for h in view.topology.hosts if view.host_location(h.name) == (sw, port)]
        r = a.reaches.get((sw, port))
        if not pp.acls or not senders or r is None:
            continue
        earlier: list[tuple[int, int]] = []
        for rule in (rule for name in pp.acls for rule in policy.acls.get(name, ())):
            if rule.wc is None:
                break   # what the later rules see depends on a match the checks cannot read
            space = _rule_space(rule, earlier)
            earlier.append(rule.wc)
            if rule.allow is None or not space.terms:
                continue
            for src in senders:
                mine = space.intersect_wc(wc13(eth_src=src.mac)).prune()
                if rule.allow:
                    out.extend(_allowed(view, policy, vlans, rule, sw, port, src, mine, r))
                else:
                    out.extend(_denied(view, rule, sw, port, src, mine, r))
    return out


def _denied(view: NetworkView, rule: AclRule, sw: str, port: int, src: HostSpec, mine: HS13,
            r: Reach13) -> list[Finding]:
    out = []
    delivered = r.delivered
    for dst in view.topology.hosts:
        events = delivered.get(dst.name, [])
        leak = (_union(events) & mine).prune() if events and dst.name != src.name else HS13()
        if not leak.terms:
            continue
        e = _event_of(events, leak, src, dst)
        path = _path_text(e, view.host_location(dst.name))
        named = rule.names(src.name, dst)
        to = "" if f"-> {dst.name}" in named else f" to {dst.name}"
        out.append(Finding(
            "acl", f"{_where(rule, sw, port)} denies {named}, but it is delivered{to} over {path} "
                   f"(e.g. {_example(leak, src, dst)})",
            hosts=(src.name, dst.name), switches=(sw,),
            details={"acl": rule.acl, "rule": rule.index, "port": f"{sw}:{port}", "action": "deny",
                     "header_space": describe13(leak), "path": path, "rules": list(e.rule_texts()),
                     "witness": _witness(leak)}))
    return out


def _allowed(view: NetworkView, policy: FaucetPolicy, vlans: dict[str, str], rule: AclRule, sw: str, port: int,
             src: HostSpec, mine: HS13, r: Reach13) -> list[Finding]:
    out: list[Finding] = []
    delivered, drops = r.delivered, r.drops
    vs = vlans.get(src.name)
    if vs is None or vs in policy.vlan_acls:
        return out   # a VLAN ACL may still drop what the port's ACL lets through
    for dst in view.topology.hosts:
        if dst.name == src.name or vlans.get(dst.name) != vs:
            continue
        want = (mine & host_traffic(src, dst)).prune()
        if not want.terms:
            continue
        missing = (want - _union(delivered.get(dst.name, []))).prune()
        if not missing.terms:
            continue
        w = missing.witness()
        why = _drop_text(drops, w) if w is not None else "not delivered"
        out.append(Finding(
            "acl", f"{_where(rule, sw, port)} allows {rule.names(src.name, dst)}, but it is {why} "
                   f"(e.g. {_example(missing, src, dst)})",
            hosts=(src.name, dst.name), switches=(sw,),
            details={"acl": rule.acl, "rule": rule.index, "port": f"{sw}:{port}", "action": "allow",
                     "vlan": vs, "header_space": describe13(missing), "witness": _witness(missing)}))
    return out


__all__ = ["check_acls", "check_vlan_isolation", "host_traffic", "host_vlans"]
