"""Which host pairs a controller's own configuration keeps apart on purpose.

Reachability asks that every physically connected host pair reach each
other. A controller configured by a file (Faucet) may be *told* otherwise,
and flagging those pairs would report the operator's intent as a bug: the
view carries the pairs the configuration keeps apart
(``NetworkView.separated``), and the reachability and delivery findings for
them are set aside.

The configuration is read through the same policy model the ``isolation``
and ``acl`` invariants hold Faucet's tables to
(:mod:`netsleuth.invariants.policy.faucet`). A directed pair (src, dst) is
**kept apart** when no plain traffic from src to dst is meant to arrive,
plain traffic being the untagged IPv4 packets from src's MAC and address to
dst's (pings, TCP, UDP):

* src or dst sits on a port the config gives no native VLAN (or does not
  list), or their native VLANs differ -- routing between VLANs goes through
  Faucet's router, with its MAC as destination, so it is not plain traffic;
* or the ACLs src's traffic meets on the way in deny all of it: the ACLs of
  src's port (``acls_in``, their rules in order), then those of its VLAN,
  each packet decided by the first rule it matches and dropped when it
  matches none (as Faucet does). Only what a rule certainly allows counts
  as meant to arrive: a rule the model cannot judge (a match field outside
  the modelled headers, actions other than allow/deny) leaves what it
  matches undecided, as does an ACL the config names but does not define.

A deny that matches only part of a pair's traffic (one TCP port, ICMP only,
ARP) does not keep the pair apart: its reachability is still checked, and
the traffic the ACL drops is a drop on purpose there, not unreachable
traffic. The delivery check judges a pair, not a packet, so a packet that
such an ACL drops does count as undelivered.

A config the policy model cannot read at all (one that includes other
files) keeps every pair apart: nothing in it can be held against the tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.policy.faucet import AclRule, FaucetPolicy, FaucetPolicyError, policy_from_config
from netsleuth.model.of13.headerbits import UNTAGGED, wc13
from netsleuth.model.topology import HostSpec, Topology

Pair = tuple[str, str]

ETH_IPV4 = 0x0800


def plain_traffic(src: HostSpec, dst: HostSpec) -> HS13:
    """The untagged IPv4 packets from ``src`` (its MAC and address) to ``dst`` (its MAC and address)."""
    return HS13.injected().intersect_wc(UNTAGGED).intersect_wc(
        wc13(eth_src=src.mac, eth_dst=dst.mac, eth_type=ETH_IPV4, ipv4_src=src.ip, ipv4_dst=dst.ip))


def allowed_by(rules: Iterable[AclRule] | None, space: HS13) -> HS13:
    """The part of ``space`` that a list of ACL rules certainly allows (first match wins; a header no
    rule matches is dropped; ``None``, an ACL the config does not define, allows nothing for sure)."""
    if rules is None:
        return HS13.empty()
    allowed = HS13.empty()
    rest = space
    for rule in rules:
        if not rest:
            break
        if rule.wc is None:
            break  # matches on a field the model does not carry: what it and the rules after it do is unknown
        if rule.allow is True:
            allowed = allowed | rest.intersect_wc(rule.wc)
        rest = rest.minus_wc(rule.wc)  # a deny drops it, an unjudged action leaves it undecided
    return allowed.prune()


def _acl_rules(policy: FaucetPolicy, names: Iterable[str]) -> list[AclRule] | None:
    """The rules of the named ACLs, in order (Faucet applies a list of ACLs as one); None when one is undefined."""
    out: list[AclRule] = []
    for name in names:
        rules = policy.acls.get(name)
        if rules is None:
            return None
        out.extend(rules)
    return out


def separated_pairs(policy: FaucetPolicy, topology: Topology,
                    host_at: Mapping[str, tuple[str, int]]) -> frozenset[Pair]:
    """Directed host pairs (src, dst) that ``policy`` keeps apart on purpose (see the module doc)."""
    hosts = list(topology.hosts)
    where = {h.name: host_at.get(h.name) or topology.host_location(h.name) for h in hosts}
    vlan = {h.name: policy.vlan_at(*where[h.name]) for h in hosts}
    out: set[Pair] = set()
    for s in hosts:
        vs = vlan[s.name]
        port = policy.ports.get(where[s.name])
        stages = [_acl_rules(policy, names)  # the source's port ACLs, then its VLAN's
                  for names in ((port.acls if port is not None else ()), policy.vlan_acls_in.get(vs or "", ()))
                  if names]
        for d in hosts:
            if d is s:
                continue
            if vs is None or vlan[d.name] != vs:
                out.add((s.name, d.name))
                continue
            if not stages:
                continue  # no ACL on the way: all of it is meant to arrive
            meant = plain_traffic(s, d)
            for rules in stages:
                meant = allowed_by(rules, meant)
            if not meant:
                out.add((s.name, d.name))
    return frozenset(out)


def faucet_separated(config: Mapping[str, Any], topology: Topology,
                     host_at: Mapping[str, tuple[str, int]]) -> frozenset[Pair]:
    """Directed host pairs (src, dst) that a Faucet ``config`` keeps apart on purpose."""
    try:
        policy = policy_from_config(dict(config), topology)
    except FaucetPolicyError:
        return frozenset((s.name, d.name) for s in topology.hosts for d in topology.hosts if s is not d)
    return separated_pairs(policy, topology, host_at)


def separated_by(configs: Iterable[Mapping[str, Any]], topology: Topology,
                 host_at: Mapping[str, tuple[str, int]]) -> frozenset[Pair]:
    """The union over several controllers' configs (each may keep pairs apart)."""
    out: frozenset[Pair] = frozenset()
    for config in configs:
        out |= faucet_separated(config, topology, host_at)
    return out


__all__ = ["allowed_by", "faucet_separated", "plain_traffic", "separated_by", "separated_pairs"]
