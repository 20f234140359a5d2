"""Topologies: a pure description of switches, hosts and the links between them.

Why a separate description (as Mininet's ``Topo``): the same topology is run
against a real controller over TCP, explored by the model checker, recorded in
a trace header and rebuilt for replay, so it must be a small value that says
*what* the network is and nothing about *running* it. Building never touches
sockets, processes or clocks, and everything is deterministic: names, dpids,
MACs, IPs, port numbers and every ordering follow the order of construction
(never hash order), so the same spec always yields the same network.

Conventions (Mininet's, so users recognise them):

* Ports are assigned per node in order of link addition: a switch's first
  link gets port 1, the next port 2, ...; a host's single interface is port 0
  (Mininet's ``eth0``; ``Topo.addPort`` uses base 1 for switches, 0 for hosts).
* Default names are ``s1..sN`` / ``h1..hN`` in creation order; switch number N
  gets dpid N; host number k gets MAC k (``00:00:00:00:00:0k``) and IP
  ``0x0A000000 + k`` (10.0.0.k, continuing into 10.0.x.y past 254, which is
  what Mininet's ``ipAdd`` does inside 10.0.0.0/8).
* Every host attaches to exactly one switch port.

This module holds the value itself, its JSON form, and
:func:`build_from_records`, which turns a file's records into a topology
with the same defaults. The named shapes (``linear,4``, ``fattree,4``, ...)
and the spec parser are in :mod:`netsleuth.model.topo_builders`; reading and
writing files (JSON, GraphML) is in :mod:`netsleuth.model.topology_io`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netsleuth.errors import UnknownTopologyError
from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_int

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "SwitchSpec",
    "HostSpec",
    "Link",
    "Topology",
    "build_from_records",
    "KNOWN_FORMS",
    "JSON_FORMAT",
    "JSON_VERSION",
    "JSON_FIX",
]

SWITCH = "switch"
HOST = "host"
OFPP_MAX = 0xFF00  # highest physical port number in OpenFlow 1.0
IP_BASE = 0x0A000000  # 10.0.0.0/8, Mininet's default ipBase

JSON_FORMAT = "netsleuth-topology"
JSON_VERSION = 1

KNOWN_FORMS = (
    "single,N | linear,N | tree,depth=D,fanout=F | torus,X,Y | mesh,N | ring,N | "
    "fattree,K | sts-mesh,N | sts-fattree,PODS | minimal | file:PATH (.json or .graphml)"
)
_FIX = f"use one of: {KNOWN_FORMS}"

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$")
_IP_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def _err(problem: str, fix: str = _FIX) -> UnknownTopologyError:
    return UnknownTopologyError(problem, fix)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class SwitchSpec:
    """A switch: ``num_ports`` is its highest port number in use (ports 1..num_ports)."""

    name: str
    dpid: int
    num_ports: int


@dataclass(frozen=True, slots=True)
class HostSpec:
    """A host with one interface; ``mac`` and ``ip`` are ints (see netsleuth.model.addr)."""

    name: str
    mac: int
    ip: int


@dataclass(frozen=True, slots=True)
class Link:
    """An undirected cable between ``node1:port1`` and ``node2:port2``."""

    node1: str
    port1: int
    node2: str
    port2: int

    def other(self, node: str) -> tuple[str, int]:
        """The far end ``(node, port)`` seen from ``node``."""
        if node == self.node1:
            return (self.node2, self.port2)
        if node == self.node2:
            return (self.node1, self.port1)
        raise _err(f"link {self.node1}:{self.port1}-{self.node2}:{self.port2} does not touch {node!r}",
                   "ask a link for the far end of one of its own endpoints")


# --------------------------------------------------------------------------- topology


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _first_free(start: int, taken: Callable[[int], bool]) -> int:
    """The first number from ``start`` up that ``taken`` refuses (default names, dpids, addresses)."""
    n = start
    while taken(n):
        n += 1
    return n


def _preview(names: Iterable[str], limit: int = 8) -> str:
    out: list[str] = []
    for i, name in enumerate(names):
        if i == limit:
            out.append("...")
            break
        out.append(name)
    return ", ".join(out) if out else "none"


class Topology:
    """Builder and read-only view of one network description.

    Build with :meth:`add_switch`, :meth:`add_host` and :meth:`add_link`
    (or get one from :func:`parse_topo`); afterwards treat it as a value.
    ``name`` is the form it was built by (``"linear"``), ``spec`` the exact
    string it came from (``"linear,4"``), so ``parse_topo(t.spec)`` rebuilds it.
    """

    def __init__(self, name: str = "custom", spec: str | None = None) -> None:
        self._name = name
        self._spec = name if spec is None else spec
        self._kind: dict[str, str] = {}
        self._dpid: dict[str, int] = {}
        self._by_dpid: dict[int, str] = {}
        self._host: dict[str, HostSpec] = {}
        self._by_mac: dict[int, str] = {}
        self._by_ip: dict[int, str] = {}
        self._peer: dict[str, dict[int, tuple[str, int]]] = {}
        self._links: list[Link] = []
        self._location: dict[str, tuple[str, int]] = {}
        self._switch_cache: tuple[SwitchSpec, ...] | None = None
        self._host_cache: tuple[HostSpec, ...] | None = None
        self._link_cache: tuple[Link, ...] | None = None

    # ------------------------------------------------------------------ identity

    @property
    def name(self) -> str:
        return self._name

    @property
    def spec(self) -> str:
        return self._spec

    def __repr__(self) -> str:
        return (f"Topology({self._spec!r}: {len(self._dpid)} switches, "
                f"{len(self._host)} hosts, {len(self._links)} links)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Topology):
            return NotImplemented
        return (self._name == other._name and self._spec == other._spec
                and list(self._dpid.items()) == list(other._dpid.items())
                and list(self._host.values()) == list(other._host.values())
                and self._links == other._links)

    __hash__ = None  # type: ignore[assignment]  # a builder is mutable

    def __contains__(self, node: object) -> bool:
        return node in self._kind

    # ------------------------------------------------------------------ building

    def _check_new_name(self, name: object, what: str) -> str:
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise _err(f"invalid {what} name {name!r}",
                       "names start with a letter or '_' and use only letters, digits, '_', '.', '-' (e.g. s1, h1)")
        kind = self._kind.get(name)
        if kind is not None:
            raise _err(f"{what} name {name!r} is already used by a {kind}",
                       "give every switch and host a unique name")
        return name

    def _new_name(self, name: str | None, prefix: str, ordinal: int, what: str) -> str:
        """``name`` checked, or by default ``<prefix><N>`` with N the first free number from ``ordinal``."""
        if name is None:
            return f"{prefix}{_first_free(ordinal, lambda n: f'{prefix}{n}' in self._kind)}"
        return self._check_new_name(name, what)

    def add_switch(self, name: str | None = None, dpid: int | None = None) -> str:
        """Add a switch; defaults: name ``s<N>`` and dpid N (N = its number, skipping taken ones).

        Returns the switch name.
        """
        ordinal = len(self._dpid) + 1
        name = self._new_name(name, "s", ordinal, "switch")
        if dpid is None:
            dpid = _first_free(ordinal, self._by_dpid.__contains__)
        elif not _is_int(dpid) or not 0 < dpid < 1 << 64:
            raise _err(f"switch {name}: dpid {dpid!r} is not an integer in 1..2^64-1",
                       "give a positive 64-bit datapath id (OVS refuses 0)")
        elif dpid in self._by_dpid:
            raise _err(f"switch {name}: dpid {dpid} is already used by switch {self._by_dpid[dpid]}",
                       "give every switch a unique dpid (or leave it out to number them automatically)")
        self._kind[name] = SWITCH
        self._dpid[name] = dpid
        self._by_dpid[dpid] = name
        self._peer[name] = {}
        self._switch_cache = None
        return name

    def add_host(self, name: str | None = None, mac: int | str | None = None,
                 ip: int | str | None = None) -> str:
        """Add a host; defaults: name ``h<k>``, MAC k, IP 10.0.0.k (``0x0A000000 + k``).

        k is the host's number (skipping values already taken). MAC and IP may
        be given as ints or strings. Returns the host name.
        """
        ordinal = len(self._host) + 1
        name = self._new_name(name, "h", ordinal, "host")
        if mac is None:
            mac_i = _first_free(ordinal, self._by_mac.__contains__)
        else:
            mac_i = self._parse_addr(name, "mac", mac)
        if ip is None:
            k = _first_free(ordinal, lambda k: IP_BASE + k in self._by_ip)
            if k >= 1 << 24:
                raise _err(f"host {name}: no default address left in 10.0.0.0/8",
                           "give the host an explicit ip")
            ip_i = IP_BASE + k
        else:
            ip_i = self._parse_addr(name, "ip", ip)
        if not 0 < mac_i < 1 << 48 or (mac_i >> 40) & 1:
            raise _err(f"host {name}: mac {int_to_mac(mac_i) if 0 <= mac_i < 1 << 48 else mac_i} "
                       "is not a unicast Ethernet address",
                       "give a non-zero 48-bit MAC whose first octet is even")
        if mac_i in self._by_mac:
            raise _err(f"host {name}: mac {int_to_mac(mac_i)} is already used by host {self._by_mac[mac_i]}",
                       "give every host a unique MAC")
        if not 0 < ip_i < 1 << 32:
            raise _err(f"host {name}: ip {ip_i} is not an IPv4 address", "give an address like 10.0.0.1")
        if ip_i in self._by_ip:
            raise _err(f"host {name}: ip {int_to_ip(ip_i)} is already used by host {self._by_ip[ip_i]}",
                       "give every host a unique IP")
        self._kind[name] = HOST
        self._host[name] = HostSpec(name, mac_i, ip_i)
        self._by_mac[mac_i] = name
        self._by_ip[ip_i] = name
        self._peer[name] = {}
        self._host_cache = None
        return name

    @staticmethod
    def _parse_addr(host: str, field: str, value: object) -> int:
        if _is_int(value):
            return value  # type: ignore[return-value]
        if isinstance(value, str):
            if field == "mac" and _MAC_RE.match(value):
                return mac_to_int(value)
            if field == "ip" and _IP_RE.match(value) and all(int(o) <= 255 for o in value.split(".")):
                return ip_to_int(value)
        example = "00:00:00:00:00:01" if field == "mac" else "10.0.0.1"
        raise _err(f"host {host}: {field} {value!r} is not valid", f"give an int or a string like {example}")

    def _node_kind(self, node: object) -> str:
        kind = self._kind.get(node) if isinstance(node, str) else None  # nodes are named by str
        if kind is None:
            raise _err(f"{node!r} is not a switch or host of this topology",
                       f"use a known node (switches: {_preview(self._dpid)}; hosts: {_preview(self._host)})")
        return kind

    def _pick_port(self, node: str, kind: str, port: int | None) -> int:
        used = self._peer[node]
        if port is None:
            port = len(used) + (1 if kind == SWITCH else 0)  # Mininet's Topo.addPort
            while port in used:
                port += 1
        elif not _is_int(port):
            raise _err(f"{node}: port {port!r} is not an integer", "give ports as integers")
        elif port in used:
            far, far_port = used[port]
            raise _err(f"{node} port {port} is already linked to {far}:{far_port}",
                       "give a free port number or leave it out to number ports automatically")
        if kind == SWITCH and not 1 <= port <= OFPP_MAX:
            raise _err(f"switch {node}: port {port} is outside 1..{OFPP_MAX}",
                       "OpenFlow 1.0 switch ports are numbered 1..0xff00")
        if kind == HOST and port < 0:
            raise _err(f"host {node}: port {port} is negative", "host interfaces are numbered from 0")
        return port

    def add_link(self, a: str, b: str, port_a: int | None = None, port_b: int | None = None) -> Link:
        """Link ``a`` and ``b``; a port left out is the node's next one (switches from 1, hosts from 0)."""
        kind_a = self._node_kind(a)
        kind_b = self._node_kind(b)
        if a == b:
            raise _err(f"cannot link {a} to itself", "link two different nodes")
        if kind_a == HOST and kind_b == HOST:
            raise _err(f"cannot link host {a} directly to host {b}",
                       "every host attaches to exactly one switch port; put a switch between them")
        for node, kind in ((a, kind_a), (b, kind_b)):
            if kind == HOST and node in self._location:
                sw, sw_port = self._location[node]
                raise _err(f"host {node} is already attached to {sw} port {sw_port}",
                           "every host attaches to exactly one switch port; add another host instead")
        pa = self._pick_port(a, kind_a, port_a)
        pb = self._pick_port(b, kind_b, port_b)
        self._peer[a][pa] = (b, pb)
        self._peer[b][pb] = (a, pa)
        link = Link(a, pa, b, pb)
        self._links.append(link)
        if kind_a == HOST:
            self._location[a] = (b, pb)
        elif kind_b == HOST:
            self._location[b] = (a, pa)
        self._switch_cache = None
        self._link_cache = None
        return link

    def validate(self) -> None:
        """Raise unless every host is attached to a switch port (the only rule a builder can't check early)."""
        loose = [h for h in self._host if h not in self._location]
        if loose:
            raise _err(f"host {loose[0]} is not linked to any switch"
                       + (f" (nor are {_preview(loose[1:])})" if len(loose) > 1 else ""),
                       "link every host to exactly one switch port")

    # ------------------------------------------------------------------ reading

    @property
    def switches(self) -> tuple[SwitchSpec, ...]:
        """All switches, in insertion order."""
        if self._switch_cache is None:
            peer = self._peer
            self._switch_cache = tuple(SwitchSpec(n, d, max(peer[n], default=0)) for n, d in self._dpid.items())
        return self._switch_cache

    @property
    def hosts(self) -> tuple[HostSpec, ...]:
        """All hosts, in insertion order."""
        if self._host_cache is None:
            self._host_cache = tuple(self._host.values())
        return self._host_cache

    @property
    def links(self) -> tuple[Link, ...]:
        """All links, in insertion order."""
        if self._link_cache is None:
            self._link_cache = tuple(self._links)
        return self._link_cache

    def is_switch(self, node: str) -> bool:
        return self._kind.get(node) == SWITCH

    def is_host(self, node: str) -> bool:
        return self._kind.get(node) == HOST

    def switch(self, name: str) -> SwitchSpec:
        if self._kind.get(name) != SWITCH:
            raise _err(f"{name!r} is not a switch of this topology ({self._spec})",
                       f"use one of: {_preview(self._dpid)}")
        return SwitchSpec(name, self._dpid[name], max(self._peer[name], default=0))

    def switch_by_dpid(self, dpid: int) -> SwitchSpec:
        name = self._by_dpid.get(dpid)
        if name is None:
            raise _err(f"no switch has dpid {dpid!r} in {self._spec}",
                       f"use one of: {_preview(str(d) for d in self._by_dpid)}")
        return self.switch(name)

    def host(self, name: str) -> HostSpec:
        spec = self._host.get(name)
        if spec is None:
            raise _err(f"{name!r} is not a host of this topology ({self._spec})",
                       f"use one of: {_preview(self._host)}")
        return spec

    def host_location(self, host: str) -> tuple[str, int]:
        """``(switch_name, switch_port)`` the host is plugged into."""
        self.host(host)
        loc = self._location.get(host)
        if loc is None:
            raise _err(f"host {host} is not linked to any switch", "link every host to exactly one switch port")
        return loc

    def neighbor(self, node: str, port: int) -> tuple[str, int] | None:
        """The ``(node, port)`` at the far end of ``node:port``, or None if that port has no link."""
        self._node_kind(node)
        return self._peer[node].get(port)

    def ports(self, node: str) -> tuple[int, ...]:
        """The linked port numbers of a switch (or host), ascending."""
        self._node_kind(node)
        return tuple(sorted(self._peer[node]))

    def graph(self) -> nx.MultiGraph:
        """A fresh networkx MultiGraph: switches then hosts, in insertion order.

        Node attrs: ``kind`` ("switch"/"host"), ``dpid`` or ``mac``/``ip`` (ints).
        Edge key: the link's index in :attr:`links`; edge attrs ``node1``,
        ``port1``, ``node2``, ``port2`` (port1 belongs to node1).
        """
        import networkx as nx  # here, not at the top: every process that parses a topology would load it

        g = nx.MultiGraph(name=self._name, spec=self._spec)
        g.add_nodes_from((n, {"kind": SWITCH, "dpid": d}) for n, d in self._dpid.items())
        g.add_nodes_from((h.name, {"kind": HOST, "mac": h.mac, "ip": h.ip}) for h in self._host.values())
        g.add_edges_from((link.node1, link.node2, i, {"node1": link.node1, "port1": link.port1,
                                                        "node2": link.node2, "port2": link.port2})
                         for i, link in enumerate(self._links))
        return g

    # ------------------------------------------------------------------ serialization

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (the topology file format); :meth:`from_json` inverts it exactly."""
        return {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "name": self._name,
            "spec": self._spec,
            "switches": [{"name": n, "dpid": d} for n, d in self._dpid.items()],
            "hosts": [{"name": h.name, "mac": int_to_mac(h.mac), "ip": int_to_ip(h.ip)} for h in self._host.values()],
            "links": [[link.node1, link.port1, link.node2, link.port2] for link in self._links],
        }

    @classmethod
    def from_json(cls, data: Any) -> Topology:
        """Build from :meth:`to_json` output or a hand-written file.

        Hand-written files may leave out ``dpid``, ``mac``, ``ip`` and link
        ports (``["h1", "s1"]``); those are filled in as the builder would.
        """
        try:
            return _from_json(data)
        except UnknownTopologyError:
            raise
        except (TypeError, KeyError, ValueError, AttributeError, IndexError) as exc:
            raise _err(f"topology JSON is malformed: {exc.__class__.__name__}: {exc}", JSON_FIX) from exc

    def set_spec(self, spec: str) -> None:
        """Record what the user typed to get this topology (a file's ``file:PATH``), so it can be rebuilt."""
        self._spec = spec


# --------------------------------------------------------------------------- records -> topology

# The fix offered for a malformed topology file.
JSON_FIX = ('write {"switches": [{"name": "s1", "dpid": 1}], "hosts": [{"name": "h1", "mac": "00:00:00:00:00:01", '
             '"ip": "10.0.0.1"}], "links": [["h1", 0, "s1", 1]]} (dpid/mac/ip/ports optional), '
             "as netsleuth.model.topology_io.save_topology writes it")


def _fill(explicit: list[int | None], make: Callable[[int], int] = lambda k: k) -> list[int]:
    """Replace Nones by make(k) for the item's number k, skipping values given explicitly."""
    used = {v for v in explicit if v is not None}
    out: list[int] = []
    for i, v in enumerate(explicit):
        if v is None:
            k = i + 1
            while make(k) in used:
                k += 1
            v = make(k)
            used.add(v)
        out.append(v)
    return out


def build_from_records(name: str, spec: str,
                       nodes: list[tuple[str, str, dict[str, Any]]],
                       links: list[tuple[str, int | None, str, int | None]]) -> Topology:
    """Build from records (a JSON or GraphML file's); nodes are (name, kind, attrs) in order.

    Explicit values win over defaults.
    """
    switches = [(n, a.get("dpid")) for n, k, a in nodes if k == SWITCH]
    hosts = [(n, a.get("mac"), a.get("ip")) for n, k, a in nodes if k == HOST]
    for n, k, _ in nodes:
        if k not in (SWITCH, HOST):
            raise _err(f"node {n!r} has kind {k!r}", 'give every node kind "switch" or "host"')
    dpids = _fill([d for _, d in switches])
    macs = _fill([None if m is None else Topology._parse_addr(n, "mac", m) for n, m, _ in hosts])
    ips = _fill([None if i is None else Topology._parse_addr(n, "ip", i) for n, _, i in hosts],
                lambda k: IP_BASE + k)
    topo = Topology(name, spec)
    for (n, _), d in zip(switches, dpids, strict=True):
        topo.add_switch(n, d)
    for (n, _, _), m, i in zip(hosts, macs, ips, strict=True):
        topo.add_host(n, m, i)
    # Auto ports skip the ports other links name explicitly.
    reserved: dict[str, set[int]] = {}
    for a, pa, b, pb in links:
        if pa is not None:
            reserved.setdefault(a, set()).add(pa)
        if pb is not None:
            reserved.setdefault(b, set()).add(pb)
    for a, pa, b, pb in links:
        if pa is None and a in topo:
            pa = _free_port(topo, a, reserved)
        if pb is None and b in topo:
            pb = _free_port(topo, b, reserved)
        topo.add_link(a, b, pa, pb)
    topo.validate()
    return topo


def _free_port(topo: Topology, node: str, reserved: dict[str, set[int]]) -> int:
    used = topo._peer[node]
    taken = reserved.setdefault(node, set())
    port = len(used) + (1 if topo.is_switch(node) else 0)
    while port in used or port in taken:
        port += 1
    taken.add(port)
    return port


def _opt_int(value: Any, what: str) -> int | None:
    if value is None or _is_int(value):
        checked: int | None = value
        return checked
    raise _err(f"topology JSON: {what} must be an integer, not {value!r}", JSON_FIX)


def _from_json(data: Any) -> Topology:
    if not isinstance(data, dict):
        raise _err(f"topology JSON must be an object, not {type(data).__name__}", JSON_FIX)
    fmt = data.get("format", JSON_FORMAT)
    if fmt != JSON_FORMAT:
        raise _err(f"topology JSON has format {fmt!r}, expected {JSON_FORMAT!r}", JSON_FIX)
    version = data.get("version", JSON_VERSION)
    if version != JSON_VERSION:
        raise _err(f"topology JSON version {version!r} is not supported (this netsleuth reads {JSON_VERSION})",
                   "re-save the topology with this netsleuth version")
    unknown = sorted(set(data) - {"format", "version", "name", "spec", "switches", "hosts", "links"})
    if unknown:
        raise _err(f"topology JSON has unknown keys {unknown}", JSON_FIX)
    name = data.get("name", "custom")
    spec = data.get("spec", name)
    if not isinstance(name, str) or not isinstance(spec, str):
        raise _err("topology JSON: name and spec must be strings", JSON_FIX)
    nodes: list[tuple[str, str, dict[str, Any]]] = []
    for rec in data.get("switches", []):
        if isinstance(rec, str):
            rec = {"name": rec}
        nodes.append((rec["name"], SWITCH, {"dpid": _opt_int(rec.get("dpid"), "dpid")}))
    for rec in data.get("hosts", []):
        if isinstance(rec, str):
            rec = {"name": rec}
        nodes.append((rec["name"], HOST, {"mac": rec.get("mac"), "ip": rec.get("ip")}))
    links: list[tuple[str, int | None, str, int | None]] = []
    for rec in data.get("links", []):
        if isinstance(rec, dict):
            links.append((rec["node1"], _opt_int(rec.get("port1"), "port1"),
                          rec["node2"], _opt_int(rec.get("port2"), "port2")))
        elif isinstance(rec, list) and len(rec) == 4:
            links.append((rec[0], _opt_int(rec[1], "port1"), rec[2], _opt_int(rec[3], "port2")))
        elif isinstance(rec, list) and len(rec) == 2:
            links.append((rec[0], None, rec[1], None))
        else:
            raise _err(f"topology JSON: link {rec!r} is not [node1, port1, node2, port2] or [node1, node2]",
                       JSON_FIX)
    return build_from_records(name, spec, nodes, links)
