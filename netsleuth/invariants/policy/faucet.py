"""What a Faucet config says about the network, read as a policy the flow tables must meet.

Faucet is configured by one YAML file, and that file is the operator's
intent: which port sits in which VLAN, which VLANs a router joins, which ACL
filters a port's traffic. The ``isolation`` and ``acl`` invariants
(:mod:`netsleuth.invariants.policy.faucet_checks`) hold the tables Faucet installed
against this intent. This module only reads the file, in Faucet's own
vocabulary, into plain data bound to the run's topology:

* ``vlans``: name -> vid (a VLAN keyed by its vid gets that number as name);
* ``routed``: the VLAN pairs some ``routers:`` entry joins (hosts in them may
  reach each other through Faucet's router);
* ``ports``: (switch, port) -> the port's native VLAN, tagged VLANs and
  ``acls_in`` (``acl_in`` is the older single-ACL spelling), with the dp's
  ``dp_id`` mapped to the topology's switch of that datapath id;
* ``acls``: name -> its rules in order, each as the header class it matches
  (a wildcard over the 1.3 header layout) and whether it allows or denies;
  ``vlan_acls``: the VLANs that filter with ACLs of their own (then a port
  ACL's allow no longer promises delivery, so the checks do not hold it to),
  and ``vlan_acls_in``: each such VLAN's inbound ACLs, in order.

A rule whose match uses a field the header layout does not carry (in_port,
metadata, conntrack ...) or whose actions do more than allow/deny (output,
mirror, VLAN rewrites) is kept with ``wc``/``allow`` None: the checks do not
judge it, nor (first match wins) the rules after it on the same port.
Includes (``include:``) are not followed: the policy is built from one file.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.model.addr import int_to_ip, mac_to_int
from netsleuth.model.of13.fieldspec import VID_PRESENT
from netsleuth.model.of13.headerbits import FULL13, wc13
from netsleuth.model.topology import HostSpec, Topology

MAX_CONFIG_CHARS = 1_000_000   # a config carried in a trace header is untrusted input
# Faucet accepts the OpenFlow 1.0 spellings of some match fields and means the OXM ones.
_OLD_NAMES = {"dl_dst": "eth_dst", "dl_src": "eth_src", "dl_type": "eth_type", "dl_vlan": "vlan_vid",
              "nw_proto": "ip_proto", "nw_src": "ipv4_src", "nw_dst": "ipv4_dst"}
_MAC_FIELDS = frozenset(("eth_src", "eth_dst", "arp_sha", "arp_tha", "ipv6_nd_sll", "ipv6_nd_tll"))
_IP_FIELDS = frozenset(("ipv4_src", "ipv4_dst", "arp_spa", "arp_tpa", "ipv6_src", "ipv6_dst", "ipv6_nd_target"))
_INT_FIELDS = frozenset(("eth_type", "vlan_pcp", "ip_dscp", "ip_ecn", "ip_proto", "tcp_src", "tcp_dst", "udp_src",
                         "udp_dst", "sctp_src", "sctp_dst", "icmpv4_type", "icmpv4_code", "icmpv6_type",
                         "icmpv6_code", "arp_op", "ipv6_flabel", "ipv6_exthdr", "pbb_isid"))
_PROTO_NAMES = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp"}
_ETH_NAMES = {0x0800: "ipv4", 0x0806: "arp", 0x86DD: "ipv6"}


class FaucetPolicyError(NetsleuthError):
    """A Faucet config that cannot be read as a policy."""


@dataclass(frozen=True, slots=True)
class AclRule:
    """Rule ``index`` (0-based, as Faucet counts) of ACL ``acl``.

    ``fields``: the match as {OXM name: (value, mask)}; ``wc``: the same as a
    wildcard over the injected 1.3 headers, None when the match uses a field
    the layout does not carry; ``allow``: True/False, None for actions the
    checks do not model."""

    acl: str
    index: int
    fields: tuple[tuple[str, int, int], ...]
    wc: tuple[int, int] | None
    allow: bool | None
    why_unchecked: str = ""

    def value_of(self, name: str) -> int | None:
        return next((v for n, v, m in self.fields if n == name and m == FULL13.get(n, m)), None)

    def names(self, src: str, dst: HostSpec) -> str:
        """The traffic the rule names, from host ``src`` to ``dst``: ``tcp h1 -> h2:22``; the rule's own
        destination address stands in for ``dst`` when it names another one."""
        ip_dst = self.value_of("ipv4_dst")
        to = dst.name if ip_dst is None or ip_dst == dst.ip else int_to_ip(ip_dst)
        proto = self.value_of("ip_proto")
        eth = self.value_of("eth_type")
        kind = _PROTO_NAMES.get(proto, f"ip_proto {proto}") if proto is not None else (
            _ETH_NAMES.get(eth, f"eth_type {eth:#06x}") if eth is not None else "traffic")
        ports = (self.value_of(f) for f in ("tcp_dst", "udp_dst", "sctp_dst"))
        port = next((p for p in ports if p is not None), None)
        return f"{kind} {src} -> {to}" + (f":{port}" if port is not None else "")


@dataclass(frozen=True, slots=True)
class PortPolicy:
    switch: str
    port: int
    native: str | None
    tagged: tuple[str, ...]
    acls: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StackPort:
    """A stack port as the config declares it: the peer (switch, port) its LLDP must come from, and
    how long Faucet waits for it: ``max_lldp_lost`` beacons of the peer dp's ``send_interval`` seconds."""

    switch: str
    port: int
    peer: tuple[str, int] | None      # None: the config names a dp that is not in the topology
    timeout: float


@dataclass(frozen=True, slots=True)
class FaucetPolicy:
    vlans: dict[str, int]
    routed: frozenset[frozenset[str]]
    ports: dict[tuple[str, int], PortPolicy]
    acls: dict[str, tuple[AclRule, ...]]
    routers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    stack_root: str | None = None      # the dp with the best (lowest) stack priority, as a switch name
    stack: dict[tuple[str, int], StackPort] = field(default_factory=dict)
    dp_switch: dict[str, str] = field(default_factory=dict)   # dp name in the config -> topology switch
    vlan_acls: frozenset[str] = frozenset()   # VLANs with ACLs of their own (acls_in/acls_out)
    vlan_acls_in: dict[str, tuple[str, ...]] = field(default_factory=dict)  # VLAN -> its acls_in, in order

    def vlan_at(self, switch: str, port: int) -> str | None:
        pp = self.ports.get((switch, port))
        return pp.native if pp is not None else None

    def routes(self, a: str, b: str) -> bool:
        return frozenset((a, b)) in self.routed

    def router_between(self, a: str, b: str) -> str | None:
        return next((name for name, vl in self.routers.items() if a in vl and b in vl), None)


# --------------------------------------------------------------------------- reading
def policy_from_text(text: str, topology: Topology, source: str = "Faucet config") -> FaucetPolicy:
    """Parse a Faucet YAML config (``source`` names it in errors) into its policy."""
    if len(text) > MAX_CONFIG_CHARS:
        raise FaucetPolicyError(f"{source} is {len(text)} characters, more than {MAX_CONFIG_CHARS}",
                                "keep Faucet configs below 1 MB")
    import yaml  # here: only configs (Faucet's) need YAML; importing it costs every command

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FaucetPolicyError(f"{source} is not valid YAML: {str(exc).splitlines()[0]}",
                                "fix the YAML syntax (indentation, colons, brackets)") from exc
    if not isinstance(data, dict):
        raise FaucetPolicyError(f"{source} is not a YAML mapping", "a Faucet config has top-level vlans: and dps:")
    return policy_from_config(data, topology, source)


def load_faucet_policy(path: str | Path, topology: Topology) -> FaucetPolicy:
    """A Faucet config file's policy (``--faucet-policy``: what the tables are held to)."""
    p = Path(path)
    try:
        text = p.read_text(errors="replace")
    except OSError as exc:
        raise FaucetPolicyError(f"cannot read Faucet config {p}: {exc.strerror}",
                                "give a Faucet YAML file, e.g. from `netsleuth faucet-config --topo T`") from exc
    return policy_from_text(text, topology, f"Faucet config {p}")


def policy_from_config(data: dict[str, Any], topology: Topology, source: str = "Faucet config") -> FaucetPolicy:
    if "include" in data or "include-optional" in data:
        raise FaucetPolicyError(f"{source} includes other files, which the isolation and acl invariants "
                                "do not follow", "inline the included vlans/acls/routers/dps into one file")
    vlans, by_vid = _vlans(data.get("vlans"), source)

    def vlan_name(ref: Any) -> str:
        if isinstance(ref, str) and ref in vlans:
            return ref
        vid = config_int(ref)
        if vid is not None and vid in by_vid:
            return by_vid[vid]
        if vid is not None:
            return str(vid)   # a VLAN Faucet creates from a bare vid
        raise FaucetPolicyError(f"{source} names VLAN {ref!r}, which vlans: does not define",
                                "define it under vlans:, or refer to an existing VLAN")

    routers: dict[str, tuple[str, ...]] = {}
    routed: set[frozenset[str]] = set()
    for name, spec in _mapping(data.get("routers"), "routers", source).items():
        members = tuple(vlan_name(v) for v in _list(spec.get("vlans") if isinstance(spec, dict) else None))
        routers[str(name)] = members
        routed.update(frozenset((a, b)) for a in members for b in members if a != b)
    acls = {str(name): _acl(str(name), spec, source) for name, spec in
            _mapping(data.get("acls"), "acls", source).items()}
    ports, root = _dps(data.get("dps"), topology, source, vlan_name)
    dp_switch, stack = _stack(data.get("dps"), topology)
    vlan_specs = _mapping(data.get("vlans"), "vlans", source)
    filtered = frozenset(str(k) for k, v in vlan_specs.items()
                         if isinstance(v, dict) and any(v.get(a) for a in ("acl_in", "acls_in", "acl_out", "acls_out")))
    vlan_acls_in = {str(k): tuple(str(a) for a in _list(v.get("acls_in", v.get("acl_in"))))
                    for k, v in vlan_specs.items() if isinstance(v, dict) and v.get("acls_in", v.get("acl_in"))}
    return FaucetPolicy(vlans, frozenset(routed), ports, acls, routers, root, stack, dp_switch, filtered,
                        vlan_acls_in)


def _mapping(value: Any, what: str, source: str) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FaucetPolicyError(f"{source}: {what}: is not a mapping", f"write {what}: as name: settings pairs")
    return value


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def config_int(value: Any) -> int | None:
    """An integer as a Faucet config may write it (``5``, ``"0x5"``), or None (YAML's booleans are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            return None
    return None


def _vlans(value: Any, source: str) -> tuple[dict[str, int], dict[int, str]]:
    vlans: dict[str, int] = {}
    for key, spec in _mapping(value, "vlans", source).items():
        vid = config_int(spec.get("vid")) if isinstance(spec, dict) and "vid" in spec else config_int(key)
        if vid is None:
            raise FaucetPolicyError(f"{source}: VLAN {key!r} has no vid", "give it vid: N (1-4094)")
        vlans[str(key)] = vid
    return vlans, {vid: name for name, vid in vlans.items()}


def _dps(value: Any, topology: Topology, source: str,
         vlan_name: Any) -> tuple[dict[tuple[str, int], PortPolicy], str | None]:
    by_dpid = {s.dpid: s.name for s in topology.switches}
    ports: dict[tuple[str, int], PortPolicy] = {}
    best: tuple[int, str] | None = None
    for dp_name, dp in _mapping(value, "dps", source).items():
        if not isinstance(dp, dict):
            continue
        sw = by_dpid.get(config_int(dp.get("dp_id")) or -1)
        if sw is None:
            continue   # a dp of another network: nothing here to check
        stack = dp.get("stack")
        prio = config_int(stack.get("priority")) if isinstance(stack, dict) else None
        if prio is not None and (best is None or prio < best[0]):
            best = (prio, sw)
        for key, spec in _mapping(dp.get("interfaces"), f"dps: {dp_name}: interfaces", source).items():
            spec = spec if isinstance(spec, dict) else {}
            number = config_int(spec.get("number", key))
            if number is None:
                raise FaucetPolicyError(f"{source}: interface {key!r} of dp {dp_name} has no port number",
                                        "key the interface by its port number or give it number: N")
            native = spec.get("native_vlan")
            acls = _list(spec.get("acls_in", spec.get("acl_in")))
            ports[(sw, number)] = PortPolicy(sw, number, vlan_name(native) if native is not None else None,
                                             tuple(vlan_name(v) for v in _list(spec.get("tagged_vlans"))),
                                             tuple(str(a) for a in acls))
    return dict(sorted(ports.items())), best[1] if best else None


# Faucet's defaults: an LLDP beacon every 5 s per stack port, a port down after 3 missed beacons.
LLDP_SEND_INTERVAL = 5
MAX_LLDP_LOST = 3


def _stack(value: Any, topology: Topology) -> tuple[dict[str, str], dict[tuple[str, int], StackPort]]:
    by_dpid = {s.dpid: s.name for s in topology.switches}
    dps = {str(k): v for k, v in value.items() if isinstance(v, dict)} if isinstance(value, dict) else {}
    dp_switch = {name: by_dpid[dpid] for name, dp in dps.items()
                 if (dpid := config_int(dp.get("dp_id"))) is not None and dpid in by_dpid}
    interval = {name: config_int((dp.get("lldp_beacon") or {}).get("send_interval")) or LLDP_SEND_INTERVAL
                for name, dp in dps.items() if isinstance(dp.get("lldp_beacon") or {}, dict)}
    out: dict[tuple[str, int], StackPort] = {}
    for name, dp in dps.items():
        sw = dp_switch.get(name)
        interfaces = dp.get("interfaces")
        if sw is None or not isinstance(interfaces, dict):
            continue
        for key, spec in interfaces.items():
            link = spec.get("stack") if isinstance(spec, dict) else None
            number = config_int(spec.get("number", key)) if isinstance(spec, dict) else None
            if not isinstance(link, dict) or number is None or "dp" not in link:
                continue
            peer_dp, peer_port = str(link.get("dp")), config_int(link.get("port"))
            peer = (dp_switch[peer_dp], peer_port) if peer_dp in dp_switch and peer_port is not None else None
            lost = config_int(spec.get("max_lldp_lost")) or MAX_LLDP_LOST
            out[(sw, number)] = StackPort(sw, number, peer, float(lost * interval.get(peer_dp, LLDP_SEND_INTERVAL)))
    return dp_switch, dict(sorted(out.items()))


# --------------------------------------------------------------------------- ACL rules
def _acl(name: str, spec: Any, source: str) -> tuple[AclRule, ...]:
    entries = spec.get("rules") if isinstance(spec, dict) else spec
    if not isinstance(entries, list):
        raise FaucetPolicyError(f"{source}: ACL {name!r} is not a list of rules", "write it as - rule: {...}")
    out = []
    for i, entry in enumerate(entries):
        rule = entry.get("rule") if isinstance(entry, dict) else None
        if not isinstance(rule, dict):
            raise FaucetPolicyError(f"{source}: ACL {name!r} entry {i} is not a rule",
                                    "write each entry as - rule: {match fields..., actions: {allow: 0|1}}")
        out.append(_rule(name, i, rule))
    return tuple(out)


def _rule(acl: str, index: int, rule: dict[Any, Any]) -> AclRule:
    actions = rule.get("actions", {})
    actions = actions if isinstance(actions, dict) else {}
    why = ""
    extra = sorted(str(k) for k in actions if k != "allow")
    allow: bool | None = bool(actions.get("allow", False))
    if extra:
        allow, why = None, f"actions {', '.join(extra)} are not judged (only allow/deny)"
    fields: list[tuple[str, int, int]] = []
    for raw, value in rule.items():
        if raw in ("actions", "description"):
            continue
        name = _OLD_NAMES.get(str(raw), str(raw))
        got = _field(name, value)
        if got is None:
            return AclRule(acl, index, tuple(fields), None, None,
                           f"match field {raw}={value!r} is outside the header space the checks cover")
        fields.append((name, *got))
    try:
        wc = wc13(**{n: (v, m) for n, v, m in fields})
    except KeyError:
        return AclRule(acl, index, tuple(fields), None, None, "a match field is outside the header space")
    return AclRule(acl, index, tuple(fields), wc, allow, why)


def _split_mask(value: Any) -> tuple[Any, Any | None]:
    if isinstance(value, str) and "/" in value:
        v, m = value.split("/", 1)
        return v.strip(), m.strip()
    return value, None


def _field(name: str, value: Any) -> tuple[int, int] | None:
    """(value, mask) of one match field in the 1.3 header layout, or None when not representable."""
    if name in _MAC_FIELDS:
        v, m = _split_mask(value)
        try:
            return mac_to_int(str(v)), mac_to_int(str(m)) if m is not None else FULL13[name]
        except (ValueError, KeyError):
            return None
    if name in _IP_FIELDS:
        try:
            net = ipaddress.ip_network(str(value), strict=False)
        except ValueError:
            return None
        return int(net.network_address), int(net.netmask)
    if name == "vlan_vid":
        vid = config_int(value)
        return (VID_PRESENT | vid, FULL13[name]) if vid is not None else None
    if name in _INT_FIELDS:
        v, m = _split_mask(value)
        iv, im = config_int(v), config_int(m) if m is not None else FULL13[name]
        if iv is None or im is None:
            return None
        return iv, im
    return None


__all__ = ["AclRule", "FaucetPolicy", "FaucetPolicyError", "PortPolicy", "StackPort", "load_faucet_policy",
           "policy_from_config", "policy_from_text"]
