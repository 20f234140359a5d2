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

``parse_topo`` accepts Mininet's ``--topo`` syntax (``single,3``,
``linear,k=4``, ``tree,depth=2,fanout=2``, ``torus,3,3``) plus ``mesh,N``
(STS's MeshTopology), ``ring,N``, ``fattree,K``, ``minimal`` and topology
files (``file:PATH``, ``*.json``, ``*.graphml``).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import networkx as nx

from netsleuth.errors import UnknownTopologyError
from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_int

__all__ = [
    "SwitchSpec",
    "HostSpec",
    "Link",
    "Topology",
    "parse_topo",
    "load_topology_file",
    "KNOWN_FORMS",
    "JSON_FORMAT",
    "JSON_VERSION",
]

SWITCH = "switch"
HOST = "host"
OFPP_MAX = 0xFF00  # highest physical port number in OpenFlow 1.0
IP_BASE = 0x0A000000  # 10.0.0.0/8, Mininet's default ipBase
MAX_NODES = 2_000_000  # refuse specs that would exhaust memory instead of hanging

JSON_FORMAT = "netsleuth-topology"
JSON_VERSION = 1

KNOWN_FORMS = (
    "single,N | linear,N | tree,depth=D,fanout=F | torus,X,Y | mesh,N | ring,N | "
    "fattree,K | minimal | file:PATH (.json or .graphml)"
)
_FIX = f"use one of: {KNOWN_FORMS}"

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$")
_IP_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"


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

    def add_switch(self, name: str | None = None, dpid: int | None = None) -> str:
        """Add a switch; defaults: name ``s<N>`` and dpid N (N = its number, skipping taken ones).

        Returns the switch name.
        """
        ordinal = len(self._dpid) + 1
        if name is None:
            n = ordinal
            while f"s{n}" in self._kind:
                n += 1
            name = f"s{n}"
        else:
            self._check_new_name(name, "switch")
        if dpid is None:
            dpid = ordinal
            while dpid in self._by_dpid:
                dpid += 1
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
        if name is None:
            n = ordinal
            while f"h{n}" in self._kind:
                n += 1
            name = f"h{n}"
        else:
            self._check_new_name(name, "host")
        if mac is None:
            mac_i = ordinal
            while mac_i in self._by_mac:
                mac_i += 1
        else:
            mac_i = self._parse_addr(name, "mac", mac)
        if ip is None:
            k = ordinal
            while IP_BASE + k in self._by_ip:
                k += 1
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
        kind = self._kind.get(node)  # type: ignore[arg-type]
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
        g = nx.MultiGraph(name=self._name, spec=self._spec)
        g.add_nodes_from((n, {"kind": SWITCH, "dpid": d}) for n, d in self._dpid.items())
        g.add_nodes_from((h.name, {"kind": HOST, "mac": h.mac, "ip": h.ip}) for h in self._host.values())
        g.add_edges_from((l.node1, l.node2, i, {"node1": l.node1, "port1": l.port1,
                                                  "node2": l.node2, "port2": l.port2})
                         for i, l in enumerate(self._links))
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
            "links": [[l.node1, l.port1, l.node2, l.port2] for l in self._links],
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
            raise _err(f"topology JSON is malformed: {exc.__class__.__name__}: {exc}", _JSON_FIX) from exc

    def save(self, path: str | Path) -> Path:
        """Write the topology: GraphML if the path ends in ``.graphml``, JSON otherwise."""
        path = Path(path)
        if path.suffix.lower() == ".graphml":
            path.write_text(self._graphml_text(), encoding="utf-8")
        else:
            path.write_text(self._json_text(), encoding="utf-8")
        return path

    def _json_text(self) -> str:
        # One record per line: readable, diff-friendly, and small for big fat-trees.
        d = self.to_json()
        head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(d[k])}" for k in ("format", "version", "name", "spec"))
        parts = [head]
        for key in ("switches", "hosts", "links"):
            items = ",\n".join("    " + json.dumps(x) for x in d[key])
            parts.append(f'  "{key}": [\n{items}\n  ]' if items else f'  "{key}": []')
        return "{\n" + ",\n".join(parts) + "\n}\n"

    def _graphml_text(self) -> str:
        # Written in link order with source=node1/target=node2, so the file
        # round-trips exactly; networkx.read_graphml reads it too.
        esc = _xml_escape
        lines = [
            '<?xml version="1.0" encoding="utf-8"?>',
            f'<graphml xmlns="{_GRAPHML_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
            f'xsi:schemaLocation="{_GRAPHML_NS} {_GRAPHML_NS}/1.0/graphml.xsd">',
            '  <key id="g_name" for="graph" attr.name="name" attr.type="string" />',
            '  <key id="g_spec" for="graph" attr.name="spec" attr.type="string" />',
            '  <key id="kind" for="node" attr.name="kind" attr.type="string" />',
            '  <key id="dpid" for="node" attr.name="dpid" attr.type="long" />',
            '  <key id="mac" for="node" attr.name="mac" attr.type="string" />',
            '  <key id="ip" for="node" attr.name="ip" attr.type="string" />',
            '  <key id="port1" for="edge" attr.name="port1" attr.type="int" />',
            '  <key id="port2" for="edge" attr.name="port2" attr.type="int" />',
            '  <graph edgedefault="undirected">',
            f'    <data key="g_name">{esc(self._name)}</data>',
            f'    <data key="g_spec">{esc(self._spec)}</data>',
        ]
        for n, d in self._dpid.items():
            lines.append(f'    <node id="{esc(n)}"><data key="kind">switch</data><data key="dpid">{d}</data></node>')
        for h in self._host.values():
            lines.append(f'    <node id="{esc(h.name)}"><data key="kind">host</data>'
                         f'<data key="mac">{int_to_mac(h.mac)}</data><data key="ip">{int_to_ip(h.ip)}</data></node>')
        for i, l in enumerate(self._links):
            lines.append(f'    <edge id="e{i}" source="{esc(l.node1)}" target="{esc(l.node2)}">'
                         f'<data key="port1">{l.port1}</data><data key="port2">{l.port2}</data></edge>')
        lines += ["  </graph>", "</graphml>", ""]
        return "\n".join(lines)


def _xml_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


# --------------------------------------------------------------------------- records -> topology

_JSON_FIX = ('write {"switches": [{"name": "s1", "dpid": 1}], "hosts": [{"name": "h1", "mac": "00:00:00:00:00:01", '
             '"ip": "10.0.0.1"}], "links": [["h1", 0, "s1", 1]]} (dpid/mac/ip/ports optional), '
             "as Topology.save writes it")


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


def _build(name: str, spec: str,
           nodes: list[tuple[str, str, dict[str, Any]]],
           links: list[tuple[str, int | None, str, int | None]]) -> Topology:
    """Build from records; nodes are (name, kind, attrs) in order. Explicit values win over defaults."""
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
    for (n, _), d in zip(switches, dpids):
        topo.add_switch(n, d)
    for (n, _, _), m, i in zip(hosts, macs, ips):
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
        return value
    raise _err(f"topology JSON: {what} must be an integer, not {value!r}", _JSON_FIX)


def _from_json(data: Any) -> Topology:
    if not isinstance(data, dict):
        raise _err(f"topology JSON must be an object, not {type(data).__name__}", _JSON_FIX)
    fmt = data.get("format", JSON_FORMAT)
    if fmt != JSON_FORMAT:
        raise _err(f"topology JSON has format {fmt!r}, expected {JSON_FORMAT!r}", _JSON_FIX)
    version = data.get("version", JSON_VERSION)
    if version != JSON_VERSION:
        raise _err(f"topology JSON version {version!r} is not supported (this netsleuth reads {JSON_VERSION})",
                   "re-save the topology with this netsleuth version")
    unknown = sorted(set(data) - {"format", "version", "name", "spec", "switches", "hosts", "links"})
    if unknown:
        raise _err(f"topology JSON has unknown keys {unknown}", _JSON_FIX)
    name = data.get("name", "custom")
    spec = data.get("spec", name)
    if not isinstance(name, str) or not isinstance(spec, str):
        raise _err("topology JSON: name and spec must be strings", _JSON_FIX)
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
                       _JSON_FIX)
    return _build(name, spec, nodes, links)


# --------------------------------------------------------------------------- GraphML

_GRAPHML_FIX = ('write GraphML as networkx.write_graphml does, with node data kind ("switch"/"host", default switch), '
                "optional dpid/mac/ip, and edge data port1/port2 (port1 belongs to the source)")


def _graphml_value(text: str | None, typ: str) -> Any:
    text = (text or "").strip()
    if typ in ("int", "long"):
        return int(text)
    if typ in ("float", "double"):
        return float(text)
    if typ == "boolean":
        return text.lower() in ("true", "1")
    return text


def _graphml_int(value: Any, what: str) -> int | None:
    if value is None or value == "":
        return None
    if _is_int(value):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            pass
    raise _err(f"GraphML {what} {value!r} is not an integer", _GRAPHML_FIX)


def _from_graphml(text: str, where: str) -> Topology:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise _err(f"{where} is not valid GraphML XML: {exc}", _GRAPHML_FIX) from exc
    ns = ""
    if root.tag.startswith("{"):
        ns = root.tag[: root.tag.index("}") + 1]
    if root.tag != f"{ns}graphml":
        raise _err(f"{where} is not GraphML (root element is {root.tag!r})", _GRAPHML_FIX)
    keys: dict[str, tuple[str, str, str]] = {}  # id -> (for, attr name, type)
    defaults: dict[str, dict[str, Any]] = {"node": {}, "edge": {}, "graph": {}}
    for key in root.iter(f"{ns}key"):
        kid = key.get("id", "")
        scope = key.get("for", "all")
        attr = key.get("attr.name", kid)
        typ = key.get("attr.type", "string")
        keys[kid] = (scope, attr, typ)
        dflt = key.find(f"{ns}default")
        if dflt is not None:
            for s in (("node", "edge", "graph") if scope == "all" else (scope,)):
                if s in defaults:
                    defaults[s][attr] = _graphml_value(dflt.text, typ)
    graph = root.find(f"{ns}graph")
    if graph is None:
        raise _err(f"{where} has no <graph> element", _GRAPHML_FIX)

    def data_of(elem: ET.Element, scope: str) -> dict[str, Any]:
        out = dict(defaults[scope])
        for d in elem.findall(f"{ns}data"):
            kid = d.get("key", "")
            if kid not in keys:
                raise _err(f"{where}: data refers to undeclared key {kid!r}", _GRAPHML_FIX)
            _, attr, typ = keys[kid]
            try:
                out[attr] = _graphml_value(d.text, typ)
            except ValueError as exc:
                raise _err(f"{where}: value {d.text!r} of {attr!r} is not a {typ}", _GRAPHML_FIX) from exc
        return out

    gdata = data_of(graph, "graph")
    nodes: list[tuple[str, str, dict[str, Any]]] = []
    for node in graph.findall(f"{ns}node"):
        nid = node.get("id")
        if nid is None:
            raise _err(f"{where}: a <node> has no id", _GRAPHML_FIX)
        attrs = data_of(node, "node")
        kind = str(attrs.get("kind", SWITCH)).lower()
        rec: dict[str, Any] = {}
        if kind == SWITCH:
            rec["dpid"] = _graphml_int(attrs.get("dpid"), f"dpid of {nid}")
        elif kind == HOST:
            for f in ("mac", "ip"):
                v = attrs.get(f)
                rec[f] = None if v == "" else v
        nodes.append((nid, kind, rec))
    links: list[tuple[str, int | None, str, int | None]] = []
    for edge in graph.findall(f"{ns}edge"):
        src, dst = edge.get("source"), edge.get("target")
        if src is None or dst is None:
            raise _err(f"{where}: an <edge> lacks source or target", _GRAPHML_FIX)
        attrs = data_of(edge, "edge")
        p1 = _graphml_int(attrs.get("port1"), "port1")
        p2 = _graphml_int(attrs.get("port2"), "port2")
        if attrs.get("node1") == dst and attrs.get("node2") == src:
            src, dst = dst, src  # networkx may write an undirected edge the other way round
        links.append((src, p1, dst, p2))
    name = str(gdata.get("name") or "file")
    spec = str(gdata.get("spec") or name)
    return _build(name, spec, nodes, links)


# --------------------------------------------------------------------------- files


def load_topology_file(path: str | Path, spec: str | None = None) -> Topology:
    """Read a ``.json`` (:meth:`Topology.to_json` format) or ``.graphml`` topology file.

    The result's ``spec`` is ``spec`` if given (what the user typed), else
    ``file:PATH``, so the topology records where it came from.
    """
    path = Path(path)
    where = f"topology file {str(path)!r}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise _err(f"{where} does not exist", f"check the path, or {_FIX}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise _err(f"{where} cannot be read: {exc}", "give a readable UTF-8 .json or .graphml file") from exc
    suffix = path.suffix.lower()
    is_graphml = suffix == ".graphml" or (suffix != ".json" and text.lstrip().startswith("<"))
    try:
        if is_graphml:
            topo = _from_graphml(text, where)
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _err(f"{where} is not valid JSON: {exc}", _JSON_FIX) from exc
            topo = Topology.from_json(data)
    except UnknownTopologyError as exc:
        if exc.problem.startswith(where):
            raise
        raise UnknownTopologyError(f"{where}: {exc.problem}", exc.fix) from exc
    topo._spec = spec if spec is not None else f"file:{path}"
    return topo


# --------------------------------------------------------------------------- builders


def _single(t: Topology, k: int) -> None:
    # Mininet SingleSwitchTopo: s1, then h1..hk each linked (host, switch).
    s = t.add_switch()
    for _ in range(k):
        t.add_link(t.add_host(), s)


def _minimal(t: Topology) -> None:
    _single(t, 2)  # Mininet MinimalTopo: s1 with h1 and h2


def _linear(t: Topology, k: int, n: int = 1) -> None:
    # Mininet LinearTopo(k, n=1): si gets port 1 = hi, port 2 = s(i-1), port 3 = s(i+1).
    last: str | None = None
    for _ in range(k):
        s = t.add_switch()
        t.add_link(t.add_host(), s)
        if last is not None:
            t.add_link(s, last)
        last = s


def _tree(t: Topology, depth: int, fanout: int) -> None:
    # Mininet TreeTopo.addTree: create a switch, build each child subtree, then
    # link (parent, child); so switches and hosts are numbered depth-first and
    # a child switch's uplink is its port fanout+1.
    def add_tree(d: int) -> str:
        if d == 0:
            return t.add_host()
        node = t.add_switch()
        for _ in range(fanout):
            child = add_tree(d - 1)
            t.add_link(node, child)
        return node

    add_tree(depth)


def _torus(t: Topology, x: int, y: int, n: int = 1) -> None:
    # Mininet TorusTopo(x, y, n=1) with switches named s1..s(x*y) in Mininet's
    # creation order: Mininet's switch "s{i}x{j}" (1-based) is s{(i-1)*y + j}
    # here, with dpid (i-1)*y + j (Mininet uses i*256 + j); host h{same number}.
    sw: list[str] = []
    for _ in range(x * y):
        s = t.add_switch()
        t.add_link(t.add_host(), s)
        sw.append(s)
    for i in range(x):
        for j in range(y):
            t.add_link(sw[i * y + j], sw[i * y + (j + 1) % y])
            t.add_link(sw[i * y + j], sw[((i + 1) % x) * y + j])


def _mesh(t: Topology, k: int) -> None:
    # STS MeshTopology: every switch linked to every other, one host each.
    # si: port 1 = hi, then the other switches in ascending order.
    sw = []
    for _ in range(k):
        s = t.add_switch()
        t.add_link(t.add_host(), s)
        sw.append(s)
    for i in range(k):
        for j in range(i + 1, k):
            t.add_link(sw[i], sw[j])


def _ring(t: Topology, k: int) -> None:
    # linear,k closed by sk-s1: si port 1 = hi, 2 = s(i-1) (s1: s2), 3 = s(i+1) (s1: sk).
    _linear(t, k)
    t.add_link(f"s{k}", "s1")


def _fattree(t: Topology, k: int) -> None:
    # Al-Fares et al. k-ary fat tree. Switches in order: cores c1..c(k/2)^2,
    # then pod by pod its aggregation a.. and edge e.. switches (numbered
    # globally), dpid = creation number. Every switch uses ports 1..k:
    #   edge e: 1..k/2 = hosts, k/2+1..k = the pod's aggregation switches
    #   agg  a: 1..k/2 = the pod's edge switches, k/2+1..k = its cores
    #   core c: port p = pod p
    # Aggregation switch j of every pod links to cores j*k/2+1 .. (j+1)*k/2.
    half = k // 2
    cores = [t.add_switch(f"c{i + 1}") for i in range(half * half)]
    aggs: list[list[str]] = []
    edges: list[list[str]] = []
    for p in range(k):
        aggs.append([t.add_switch(f"a{p * half + j + 1}") for j in range(half)])
        edges.append([t.add_switch(f"e{p * half + j + 1}") for j in range(half)])
    for p in range(k):
        for e in edges[p]:
            for _ in range(half):
                t.add_link(t.add_host(), e)
    for p in range(k):
        for e in edges[p]:
            for a in aggs[p]:
                t.add_link(e, a)
    for p in range(k):
        for j, a in enumerate(aggs[p]):
            for c in range(half):
                t.add_link(a, cores[j * half + c])


@dataclass(frozen=True, slots=True)
class _Form:
    build: Callable[..., None]
    params: tuple[tuple[str, int | None, int], ...]  # (name, default or None = required, minimum)
    usage: str
    size: Callable[..., int]  # number of nodes, checked before building
    check: Callable[..., str | None] = lambda **_: None  # extra rule -> problem text


_FORMS: dict[str, _Form] = {
    "minimal": _Form(_minimal, (), "minimal", lambda: 3),
    "single": _Form(_single, (("k", 2, 1),), "single,N", lambda k: 1 + k),
    "linear": _Form(_linear, (("k", 2, 1), ("n", 1, 1)), "linear,N", lambda k, n: 2 * k,
                    lambda k, n: None if n == 1 else f"linear with n={n} hosts per switch is not supported"),
    "tree": _Form(_tree, (("depth", 1, 1), ("fanout", 2, 1)), "tree,depth=D,fanout=F",
                  lambda depth, fanout: depth + 1 if fanout == 1 else
                  (fanout ** (depth + 1) - 1) // (fanout - 1) if depth < 64 else MAX_NODES + 1),
    "torus": _Form(_torus, (("x", None, 3), ("y", None, 3), ("n", 1, 1)), "torus,X,Y",
                   lambda x, y, n: 2 * x * y,
                   lambda x, y, n: None if n == 1 else f"torus with n={n} hosts per switch is not supported"),
    "mesh": _Form(_mesh, (("k", 3, 1),), "mesh,N", lambda k: 2 * k),
    "ring": _Form(_ring, (("k", 3, 3),), "ring,N", lambda k: 2 * k),
    "fattree": _Form(_fattree, (("k", 4, 2),), "fattree,K", lambda k: 5 * k * k // 4 + k ** 3 // 4,
                     lambda k: None if k % 2 == 0 else f"fattree needs an even K, got {k}"),
}


def _parse_int(form: str, param: str, text: str, usage: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text.strip()):
        raise _err(f"{form}: {param}={text!r} is not an integer", f"write e.g. {usage}; {_FIX}")
    return int(text)


def parse_topo(spec: str) -> Topology:
    """Build the topology a Mininet-style spec names (see :data:`KNOWN_FORMS`)."""
    if not isinstance(spec, str) or not spec.strip():
        raise _err(f"empty topology spec {spec!r}")
    text = spec.strip()
    if text.startswith("file:"):
        return load_topology_file(text[len("file:"):], spec=text)
    if text.lower().endswith((".json", ".graphml")):
        return load_topology_file(text, spec=text)
    parts = [p.strip() for p in text.split(",")]
    form_name = parts[0].lower()
    form = _FORMS.get(form_name)
    if form is None:
        raise _err(f"unknown topology {parts[0]!r}")
    names = [p for p, _, _ in form.params]
    values: dict[str, int] = {}
    positional = 0
    for part in parts[1:]:
        if "=" in part:
            key, _, val = part.partition("=")
            key = key.strip()
            if key not in names:
                expected = ", ".join(names) or "no arguments"
                raise _err(f"{form_name}: unknown argument {key!r} (takes {expected})", f"write e.g. {form.usage}")
        else:
            if positional >= len(names):
                raise _err(f"{form_name}: too many arguments in {text!r}", f"write e.g. {form.usage}")
            key, val = names[positional], part
            positional += 1
        if key in values:
            raise _err(f"{form_name}: argument {key!r} given twice in {text!r}", f"write e.g. {form.usage}")
        values[key] = _parse_int(form_name, key, val, form.usage)
    for pname, default, minimum in form.params:
        if pname not in values:
            if default is None:
                raise _err(f"{form_name}: missing argument {pname!r}", f"write e.g. {form.usage}")
            values[pname] = default
        if values[pname] < minimum:
            why = " (as Mininet requires)" if form_name == "torus" else ""
            raise _err(f"{form_name}: {pname}={values[pname]} is below the minimum {minimum}{why}",
                       f"write e.g. {form.usage} with {pname} >= {minimum}")
    problem = form.check(**values)
    if problem:
        raise _err(f"{form_name}: {problem}", f"write e.g. {form.usage}")
    size = form.size(**values)
    if size > MAX_NODES:
        raise _err(f"{text!r} would have {size} nodes, more than the limit {MAX_NODES}",
                   "choose smaller arguments")
    topo = Topology(form_name, text)
    form.build(topo, **values)
    return topo
