"""Config changes an operator makes to a Faucet configuration, drawn from the fuzzer's RNG.

Each edit takes the current configuration (plain data, as the YAML file
parses) and returns the whole new file, never a diff: a trace records the
complete file, so any subset of its config changes still replays (dropping
one leaves every later change meaning what it meant). The edits are the
everyday ones: add a VLAN, remove a VLAN (its ports move to another), move
a host port to another VLAN, add a deny rule to a port's ACL, remove an ACL
rule. Every result is a config Faucet accepts: references stay consistent
(a port's VLAN and ACLs exist; an emptied ACL is removed with its
references), and only host ports (those with a ``native_vlan``) are edited,
never stack ports.

Determinism: choices come only from the RNG passed in and from the config
itself, walked in its own (file) order.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from netsleuth.model.addr import int_to_ip

FIRST_NEW_VID = 200
MAX_VLANS = 4  # an operator adds a few VLANs, not one per round
ETH_IPV4 = 0x0800
ETH_ARP = 0x0806
IP_PROTO_ICMP = 1


@dataclass(frozen=True, slots=True)
class HostAddr:
    """A host the deny rules may name (its IPv4 address)."""

    name: str
    ip: int


@dataclass(frozen=True, slots=True)
class ConfigEdit:
    """One operator edit: the whole new file and what changed, in words."""

    config: str
    edit: str


def render(config: dict[str, Any]) -> str:
    """The YAML text of a configuration, keys in the order they have (stable for a given config)."""
    import yaml  # here: only configs (Faucet's) need YAML; importing it costs every command

    return str(yaml.safe_dump(config, sort_keys=False, default_flow_style=False))


def _host_ports(config: dict[str, Any]) -> list[tuple[str, Any]]:
    """(dp, interface key) of every host port, in file order."""
    out = []
    dps = config.get("dps") or {}
    for dp_name, dp in dps.items():
        for key, iface in ((dp or {}).get("interfaces") or {}).items():
            if isinstance(iface, dict) and "native_vlan" in iface and "stack" not in iface:
                out.append((dp_name, key))
    return out


def _iface(config: dict[str, Any], where: tuple[str, Any]) -> dict[str, Any]:
    iface: dict[str, Any] = config["dps"][where[0]]["interfaces"][where[1]]
    return iface


def _vlan_names(config: dict[str, Any]) -> list[Any]:
    return list((config.get("vlans") or {}).keys())


def _same_vlan(config: dict[str, Any], ref: Any, name: Any) -> bool:
    vlan = (config.get("vlans") or {}).get(name) or {}
    return bool(ref == name or str(ref) == str(name) or (vlan.get("vid") is not None and ref == vlan.get("vid")))


def _add_vlan(config: dict[str, Any], rng: random.Random, hosts: Sequence[HostAddr]) -> str:
    vlans = config.setdefault("vlans", {})
    used = {v.get("vid") for v in vlans.values() if isinstance(v, dict)} | {k for k in vlans if isinstance(k, int)}
    vid = FIRST_NEW_VID
    while vid in used or f"vlan{vid}" in vlans:
        vid += 1
    vlans[f"vlan{vid}"] = {"vid": vid, "description": "added by an operator"}
    return f"add VLAN vlan{vid} (vid {vid})"


def _remove_vlan(config: dict[str, Any], rng: random.Random, hosts: Sequence[HostAddr]) -> str:
    names = _vlan_names(config)
    gone = rng.choice(names)
    keep = next(n for n in names if n != gone)
    moved = []
    for where in _host_ports(config):
        iface = _iface(config, where)
        if _same_vlan(config, iface["native_vlan"], gone):
            iface["native_vlan"] = keep
            moved.append(f"{where[0]}:{where[1]}")
    del config["vlans"][gone]
    return f"remove VLAN {gone}" + (f" (ports {', '.join(moved)} move to {keep})" if moved else "")


def _move_port(config: dict[str, Any], rng: random.Random, hosts: Sequence[HostAddr]) -> str:
    where = rng.choice(_host_ports(config))
    iface = _iface(config, where)
    targets = [n for n in _vlan_names(config) if not _same_vlan(config, iface["native_vlan"], n)]
    target = rng.choice(targets)
    before = iface["native_vlan"]
    iface["native_vlan"] = target
    return f"move {where[0]} port {where[1]} from VLAN {before} to {target}"


def _deny_rule(rng: random.Random, hosts: Sequence[HostAddr]) -> tuple[dict[str, Any], str]:
    target = rng.choice(list(hosts))
    what = rng.choice(("ipv4", "arp", "icmp"))
    ip = int_to_ip(target.ip)
    if what == "ipv4":
        return {"eth_type": ETH_IPV4, "ipv4_dst": ip, "actions": {"allow": 0}}, f"IPv4 to {target.name} ({ip})"
    if what == "arp":
        return {"eth_type": ETH_ARP, "arp_tpa": ip, "actions": {"allow": 0}}, f"ARP for {target.name} ({ip})"
    return {"eth_type": ETH_IPV4, "ip_proto": IP_PROTO_ICMP, "actions": {"allow": 0}}, "all ICMP"


def _add_deny(config: dict[str, Any], rng: random.Random, hosts: Sequence[HostAddr]) -> str:
    where = rng.choice(_host_ports(config))
    iface = _iface(config, where)
    acls = config.setdefault("acls", {})
    rule, words = _deny_rule(rng, hosts)
    names = iface.get("acls_in")
    if names:
        name = names[0]
        rules = acls[name]
        # before the catch-all allow that ends the ACLs this module writes (or at the end)
        at = len(rules) - 1 if rules and _is_allow_all(rules[-1]) else len(rules)
        rules.insert(at, {"rule": rule})
    else:
        name = f"{where[0]}-port{where[1]}"
        acls[name] = [{"rule": rule}, {"rule": {"actions": {"allow": 1}}}]
        iface["acls_in"] = [name]
    return f"deny {words} coming in at {where[0]} port {where[1]} (ACL {name})"


def _is_allow_all(item: Any) -> bool:
    rule = item.get("rule") if isinstance(item, dict) else None
    return isinstance(rule, dict) and list(rule) == ["actions"] and rule["actions"] == {"allow": 1}


def _acl_rules(config: dict[str, Any]) -> list[tuple[Any, int]]:
    return [(name, i) for name, rules in (config.get("acls") or {}).items() for i in range(len(rules or []))]


def _remove_rule(config: dict[str, Any], rng: random.Random, hosts: Sequence[HostAddr]) -> str:
    name, index = rng.choice(_acl_rules(config))
    rules = config["acls"][name]
    gone = rules.pop(index)
    words = "the catch-all allow" if _is_allow_all(gone) else f"rule {index + 1}"
    if rules:
        return f"remove {words} of ACL {name}"
    del config["acls"][name]
    if not config["acls"]:
        del config["acls"]
    for where in _host_ports(config):
        iface = _iface(config, where)
        if name in (iface.get("acls_in") or []):
            iface["acls_in"] = [n for n in iface["acls_in"] if n != name]
            if not iface["acls_in"]:
                del iface["acls_in"]
    for vlan in (config.get("vlans") or {}).values():
        if isinstance(vlan, dict) and name in (vlan.get("acls_in") or []):
            vlan["acls_in"] = [n for n in vlan["acls_in"] if n != name]
            if not vlan["acls_in"]:
                del vlan["acls_in"]
    return f"remove {words} of ACL {name}, its last (the ACL goes)"


Edit = Callable[[dict[str, Any], random.Random, Sequence[HostAddr]], str]

# Each edit with the condition under which it applies, in a fixed order (the RNG picks among those that apply).
EDITS: tuple[tuple[str, Callable[[dict[str, Any], Sequence[HostAddr]], bool], Edit], ...] = (
    ("add_vlan", lambda c, h: len(_vlan_names(c)) < MAX_VLANS, _add_vlan),
    ("remove_vlan", lambda c, h: len(_vlan_names(c)) >= 2, _remove_vlan),
    ("move_port", lambda c, h: len(_vlan_names(c)) >= 2 and bool(_host_ports(c)), _move_port),
    ("add_deny", lambda c, h: bool(_host_ports(c)) and bool(h), _add_deny),
    ("remove_rule", lambda c, h: bool(_acl_rules(c)), _remove_rule),
)


def propose(config: dict[str, Any], rng: random.Random, hosts: Sequence[HostAddr]) -> ConfigEdit:
    """One edit of ``config`` (left unchanged) chosen with ``rng``: the whole new file and its description."""
    new = copy.deepcopy(config)
    applicable = [(name, edit) for name, ok, edit in EDITS if ok(new, hosts)]
    _name, edit = rng.choice(applicable)
    words = edit(new, rng, hosts)
    return ConfigEdit(render(new), words)


__all__ = ["ConfigEdit", "EDITS", "HostAddr", "propose", "render"]
