"""Which host pairs a controller's own configuration keeps apart on purpose.

Reachability asks that every physically connected host pair reach each
other. A controller configured by a file (Faucet) may be *told* otherwise:
hosts whose ports sit on different VLANs, a port on no VLAN at all, or an
ACL that drops some of a host's traffic. Flagging those pairs would report
the operator's intent as a bug, so the view carries the pairs the
configuration separates (``NetworkView.separated``) and the reachability
findings for them are set aside.

The reading is deliberately conservative: a pair counts as separated when
the configuration *may* drop some of its traffic (any deny rule whose
address fields are consistent with the pair, or an ACL without a final
catch-all allow), never the other way round -- so a pair the configuration
means to connect is always checked.

Faucet's configuration vocabulary (``vlans``, ``dps``, ``interfaces``,
``native_vlan``, ``acls_in``, ``acls``) is read as plain data here: the
invariants depend on nothing but the model.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from netsleuth.invariants.faucet_policy import config_int
from netsleuth.model.addr import int_to_ip, int_to_mac
from netsleuth.model.topology import Topology

Pair = tuple[str, str]

# ACL match fields that name one end of a pair: field -> ("src" | "dst", "mac" | "ip").
_ADDRESS_FIELDS = {
    "eth_src": ("src", "mac"), "eth_dst": ("dst", "mac"),
    "ipv4_src": ("src", "ip"), "ipv4_dst": ("dst", "ip"),
    "arp_spa": ("src", "ip"), "arp_tpa": ("dst", "ip"),
}


def _vlan_ids(config: Mapping[str, Any]) -> dict[Any, Any]:
    """Every way a VLAN may be named (its key, its vid) -> one identity (its key)."""
    out: dict[Any, Any] = {}
    vlans = config.get("vlans")
    if isinstance(vlans, Mapping):
        for key, vlan in vlans.items():
            out[key] = key
            out[str(key)] = key
            vid = vlan.get("vid") if isinstance(vlan, Mapping) else None
            for name in (vid, config_int(key)):
                if name is not None:
                    out.setdefault(name, key)
                    out.setdefault(str(name), key)
    return out


def _ports(config: Mapping[str, Any], topology: Topology) -> dict[tuple[str, int], Mapping[str, Any]]:
    """(switch, port) -> its interface config, for the dps that are switches of ``topology``."""
    by_dpid = {s.dpid: s.name for s in topology.switches}
    names = {s.name for s in topology.switches}
    out: dict[tuple[str, int], Mapping[str, Any]] = {}
    dps = config.get("dps")
    if not isinstance(dps, Mapping):
        return out
    for dp_name, dp in dps.items():
        if not isinstance(dp, Mapping):
            continue
        switch = by_dpid.get(config_int(dp.get("dp_id")) or -1) or (dp_name if dp_name in names else None)
        interfaces = dp.get("interfaces")
        if switch is None or not isinstance(interfaces, Mapping):
            continue
        for key, iface in interfaces.items():
            if not isinstance(iface, Mapping):
                continue
            number = config_int(iface.get("number")) if "number" in iface else config_int(key)
            if number is not None:
                out[(switch, number)] = iface
    return out


def _acl_names(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _matches_end(value: Any, kind: str, mac: int, ip: int) -> bool:
    """Whether a rule's address field (exact, or ``addr/prefix``) can match this host's address."""
    text = str(value).strip().lower()
    try:
        if kind == "mac":
            return text.split("/")[0] == int_to_mac(mac).lower() or "/" in text
        return ipaddress.ip_address(int_to_ip(ip)) in ipaddress.ip_network(text, strict=False)
    except ValueError:
        return True  # unreadable: assume it may match (conservative)


def _rule_restricts(rule: Mapping[str, Any], src: tuple[int, int], dst: tuple[int, int]) -> bool:
    """A rule that may drop some traffic from ``src`` to ``dst`` ((mac, ip) each)."""
    actions = rule.get("actions")
    allow = actions.get("allow") if isinstance(actions, Mapping) else None
    if allow is True or (config_int(allow) or 0) > 0:
        return False
    for name, (end, kind) in _ADDRESS_FIELDS.items():
        if name in rule:
            mac, ip = src if end == "src" else dst
            if not _matches_end(rule[name], kind, mac, ip):
                return False
    return True


def _acl_restricts(rules: Any, src: tuple[int, int], dst: tuple[int, int]) -> bool:
    """An ACL that may drop some traffic from ``src`` to ``dst``: a deny rule that can match
    the pair before a catch-all allow, or no catch-all allow at all (Faucet drops what no rule
    matches)."""
    if not isinstance(rules, list):
        return True
    for item in rules:
        rule = item.get("rule") if isinstance(item, Mapping) else None
        if not isinstance(rule, Mapping):
            return True
        if _rule_restricts(rule, src, dst):
            return True
        fields = [k for k in rule if k != "actions"]
        actions = rule.get("actions")
        if not fields and isinstance(actions, Mapping) and set(actions) == {"allow"} and not _rule_restricts(
                rule, src, dst):
            return False  # catch-all allow: nothing after it matters
    return True


def faucet_separated(config: Mapping[str, Any], topology: Topology,
                     host_at: Mapping[str, tuple[str, int]]) -> frozenset[Pair]:
    """Directed host pairs (src, dst) that a Faucet ``config`` may keep apart on purpose."""
    ports = _ports(config, topology)
    vlan_of = _vlan_ids(config)
    vlans = config.get("vlans") if isinstance(config.get("vlans"), Mapping) else {}
    acls = config.get("acls") if isinstance(config.get("acls"), Mapping) else {}
    hosts = list(topology.hosts)
    where = {h.name: host_at.get(h.name) or topology.host_location(h.name) for h in hosts}
    vlan: dict[str, Any] = {}
    acl_lists: dict[str, list[Any]] = {}
    for h in hosts:
        iface = ports.get(where[h.name])
        native = iface.get("native_vlan") if iface is not None else None
        vlan[h.name] = vlan_of.get(native, native) if native is not None else None
        names = _acl_names(iface.get("acls_in", iface.get("acl_in"))) if iface is not None else []
        vconf = vlans.get(vlan[h.name]) if isinstance(vlans, Mapping) and vlan[h.name] is not None else None
        if isinstance(vconf, Mapping):
            names += _acl_names(vconf.get("acls_in", vconf.get("acl_in")))
        acl_lists[h.name] = names
    out: set[Pair] = set()
    for s in hosts:
        for d in hosts:
            if s is d:
                continue
            if vlan[s.name] is None or vlan[d.name] is None or vlan[s.name] != vlan[d.name]:
                out.add((s.name, d.name))
                continue
            src, dst = (s.mac, s.ip), (d.mac, d.ip)
            if any(_acl_restricts(acls.get(name) if isinstance(acls, Mapping) else None, src, dst)
                   for name in acl_lists[s.name]):
                out.add((s.name, d.name))
    return frozenset(out)


def separated_by(configs: Iterable[Mapping[str, Any]], topology: Topology,
                 host_at: Mapping[str, tuple[str, int]]) -> frozenset[Pair]:
    """The union over several controllers' configs (each may keep pairs apart)."""
    out: frozenset[Pair] = frozenset()
    for config in configs:
        out |= faucet_separated(config, topology, host_at)
    return out


__all__ = ["faucet_separated", "separated_by"]
