"""Names for what an STS trace mentions: switch dpids, host ids and controller ids become netsleuth's
``s<N>``, ``h<N>`` and controller names, resolved ahead by a pre-pass over the whole trace (so a host
keeps one name however STS spelled it), which also collects what a topology inferred from the
trace needs (switches, links, each host's first location and addresses).
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.model.addr import int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.topology import OFPP_MAX, Topology
from netsleuth.trace import schema as ts
from netsleuth.trace.importers.sts_config import StsConfig
from netsleuth.trace.importers.sts_read import (
    _DASHED_DPID,
    _IP_IN_TEXT,
    INFERRED_SPEC,
    OpenFlowDecoder,
    _fail,
    _host_number,
    _Rec,
)

# The classes whose "dpid" field names a switch (the pre-pass collects the switches an inferred topology has).
_NAMES_A_DPID = ("SwitchFailure", "SwitchRecovery", "ControlChannelBlock", "ControlChannelUnblock",
                 "ControlMessageReceive", "ControlMessageSend", "ProcessFlowMod")


class _StsNames:
    """The importer's state and its names: STS switch, host and controller ids as netsleuth names,
    resolved ahead by a pre-pass over the whole trace, and the topology inferred from it."""

    def __init__(self, path: Path, records: list[_Rec], blank: int, topology: Topology | None,
                 decode: OpenFlowDecoder | None, config: StsConfig | None = None) -> None:
        self.path = path
        self.records = records
        self.given = topology
        self.config = config if config is not None else StsConfig()
        self.switch_down: set[str] = set()
        self.moved_to: dict[tuple[str, int], tuple[str, int]] = {}  # a switch port a host migrated to -> host end
        self.controller_down: set[str] = set()
        self.decode = decode
        self.t0 = records[0].time
        self.events: list[ts.Event] = []
        self.converted: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.reasons: dict[str, dict[str, int]] = {}
        self.notes: list[str] = []
        if blank:
            self.notes.append(f"ignored {blank} blank line(s)")
        self._noted: set[str] = set()
        # names
        self.host_cache: dict[str, str] = {}
        self.host_alias: dict[str, str] = {}     # STS host id (as text) -> h<k>, for the header
        self.reserved: set[int] = set()
        self.controller_alias: dict[str, str] = {}
        self.controller_names: list[str] = []
        self.rec_host: dict[int, str] = {}       # lineno -> host name resolved by the pre-pass
        # inputs and dependencies
        self.next_input = 0
        self.id_of_label: dict[str, str] = {}
        self.deps: dict[str, list[str]] = {}
        self.open_failure: dict[tuple[Any, ...], str] = {}
        self.last_migration: dict[str, str] = {}
        self.unprunable: list[str] = []
        # OpenFlow connections: (dpid, controller) -> conn number
        self.conns: dict[tuple[int, str], int] = {}
        self.stale: set[tuple[int, str]] = set()
        self.next_conn = 0
        # invariants
        self.current_check: str | None = self.config.invariant_check
        self.checks: list[str] = []
        self.of_examples: list[str] = []

    def note_once(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(text)

    def skip(self, rec: _Rec, reason: str) -> None:
        self.skipped[rec.cls] = self.skipped.get(rec.cls, 0) + 1
        per = self.reasons.setdefault(rec.cls, {})
        per[reason] = per.get(reason, 0) + 1

    def where(self, rec: _Rec) -> str:
        return f"{self.path}:{rec.lineno}"

    def need(self, rec: _Rec, key: str) -> Any:
        if key not in rec.d or rec.d[key] is None:
            raise _fail(self.where(rec), f"{rec.cls} {rec.label} lacks the field {key!r}",
                        f"restore {key!r} (see sts/replay_event.py, {rec.cls}.from_json) or delete the line")
        return rec.d[key]

    def as_int(self, rec: _Rec, key: str, value: Any = None) -> int:
        v = self.need(rec, key) if value is None else value
        if type(v) is int:
            return v
        if isinstance(v, str):
            s = v.strip()
            if s.isdigit():
                return int(s)
            if _DASHED_DPID.match(s):  # POX's dpidToStr: 00-00-00-00-00-03
                return int(s.replace("-", "").replace(":", ""), 16)
        raise _fail(self.where(rec), f"{rec.cls} {rec.label}: {key!r} must be an integer, got {v!r}",
                    f"write {key!r} as a number, e.g. \"{key}\": 3")

    def switch(self, rec: _Rec, key: str, value: Any = None) -> str:
        dpid = self.as_int(rec, key, value)
        if not 0 < dpid < 1 << 64:
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: dpid {dpid} is outside 1..2^64-1",
                        "STS dpids are positive 64-bit integers")
        if self.given is not None:
            try:
                return self.given.switch_by_dpid(dpid).name
            except NetsleuthError:
                self.note_once(f"dpid{dpid}", f"dpid {dpid} is not in the given topology; named it s{dpid}")
        return f"s{dpid}"

    def controller(self, rec: _Rec, value: Any) -> str:
        if isinstance(value, str) and value:
            name = value
        elif isinstance(value, (list, tuple)) and len(value) == 2 and all(
                isinstance(x, (str, int)) and not isinstance(x, bool) for x in value):
            name = f"{value[0]}:{value[1]}"  # early STS: (ip, port)
            self.controller_alias[json.dumps(value)] = name
        else:
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: controller_id {value!r} is neither a name "
                        "nor [ip, port]", 'write e.g. "controller_id": "c1"')
        if name not in self.controller_names:
            self.controller_names.append(name)
        return name

    def _given_host(self, host_id: Any, mac: int | None, ips: list[int]) -> str | None:
        topo = self.given
        assert topo is not None
        if isinstance(host_id, str) and topo.is_host(host_id):
            return host_id
        n = _host_number(host_id)
        if n is not None and topo.is_host(f"h{n}"):
            return f"h{n}"
        if isinstance(host_id, str):
            ips = ips + [ip_to_int(ip) for ip in _IP_IN_TEXT.findall(host_id)
                         if all(int(o) <= 255 for o in ip.split("."))]
        for h in topo.hosts:
            if (mac is not None and h.mac == mac) or h.ip in ips:
                return h.name
        return None

    def host(self, host_id: Any, *, mac: int | None = None, ips: list[int] | None = None,
             location: tuple[str, int] | None = None) -> str:
        """The netsleuth name for an STS host id (or, when there is none, its interface or location)."""
        ips = ips or []
        if host_id is not None:
            key = "id:" + json.dumps(host_id, sort_keys=True)
        elif mac is not None:
            key = f"mac:{mac}"
        else:
            key = f"loc:{location}"
        name = self.host_cache.get(key)
        if name is not None:
            return name
        if self.given is not None:
            name = self._given_host(host_id, mac, ips)
            if name is None and location is not None:
                far = self.given.neighbor(*location) if location[0] in self.given else None
                if far is not None and self.given.is_host(far[0]):
                    name = far[0]
        if name is None:
            n = _host_number(host_id)
            if n is not None:
                name = f"h{n}"
            else:
                k = 1
                while k in self.reserved or f"h{k}" in self.host_cache.values():
                    k += 1
                self.reserved.add(k)
                name = f"h{k}"
                self.host_alias[str(host_id) if host_id is not None else f"mac {int_to_mac(mac)}"
                                if mac is not None else f"at {location[0]}:{location[1]}" if location
                                else key] = name
            if self.given is not None and not self.given.is_host(name):
                self.note_once(f"host:{name}", f"host {name} (STS {host_id!r}) is not in the given topology")
        self.host_cache[key] = name
        return name

    def iface(self, rec: _Rec, dp_event: Any) -> tuple[int | None, list[int], bytes]:
        """(mac, ips, packet bytes) of a TrafficInjection's dp_event."""
        if not isinstance(dp_event, dict) or not isinstance(dp_event.get("packet"), str):
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: dp_event must be "
                        '{"interface": {...}, "packet": "<base64>"}', "restore dp_event as STS wrote it")
        try:
            raw = base64.b64decode(dp_event["packet"], validate=False)
        except (binascii.Error, ValueError):
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: dp_event.packet is not base64",
                        "restore the packet bytes as STS wrote them") from None
        intf: dict[str, Any] = dp_event["interface"] if isinstance(dp_event.get("interface"), dict) else {}
        mac = None
        try:
            if isinstance(intf.get("hw_addr"), str):
                mac = mac_to_int(intf["hw_addr"])
            ips = [ip_to_int(ip) for ip in intf.get("ips") or [] if isinstance(ip, str)]
        except (ValueError, TypeError):
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: dp_event.interface has a malformed address",
                        'write e.g. {"name": "eth0", "hw_addr": "00:00:00:00:00:01", "ips": ["10.0.0.1"]}') from None
        return mac, ips, raw

    def collect_controllers(self) -> None:
        """Controllers in order of first mention (else the config's): ConnectToControllers needs them all."""
        for rec in self.records:
            if rec.d.get("controller_id") is not None:
                self.controller(rec, rec.d["controller_id"])
        if not self.controller_names:
            self.controller_names.extend(self.config.controllers)

    def prepass(self) -> None:
        """Resolve host names and collect what an inferred topology needs."""
        self._reserve_host_numbers()
        self.dpids: list[int] = []
        self.links: list[tuple[str, int, str, int]] = []
        self.first_loc: dict[str, tuple[str, int]] = {}
        self.addrs: dict[str, tuple[int | None, int | None]] = {}
        self.host_order: list[str] = []
        host_at: dict[tuple[str, int], str] = {}  # where each host is now, as the migrations so far say
        for rec in self.records:
            c = rec.cls
            if c in _NAMES_A_DPID:
                self._seen_dpid(rec, "dpid")
            elif c in ("LinkFailure", "LinkRecovery"):
                self._prepass_link(rec)
            elif c == "HostMigration":
                self._prepass_migration(rec, host_at)
            elif c == "TrafficInjection" and rec.d.get("dp_event") is not None:
                mac, ips, _ = self.iface(rec, rec.d["dp_event"])
                name = self.host(rec.d.get("host_id"), mac=mac, ips=ips)
                self.rec_host[rec.lineno] = name
                self._seen_host(name, rec.d.get("host_id"), mac, ips[0] if ips else None)
            elif c in ("DataplaneDrop", "DataplanePermit"):
                self._prepass_dataplane(rec)

    def _reserve_host_numbers(self) -> None:
        """Numbered host ids keep their number: reserve them before any other host is named."""
        for rec in self.records:
            ids = [rec.d.get("host_id")]
            fp = rec.d.get("fingerprint")
            if rec.cls.startswith("Dataplane") and isinstance(fp, list):
                ids += [x for x in fp[1:3] if isinstance(x, str)]  # a host sender is named by a string
            for host_id in ids:
                n = _host_number(host_id)
                if n is not None:
                    self.reserved.add(n)

    def _seen_dpid(self, rec: _Rec, key: str, value: Any = None) -> str:
        name = self.switch(rec, key, value)
        dpid = self.as_int(rec, key, value)
        if dpid not in self.dpids:
            self.dpids.append(dpid)
        return name

    def _seen_host(self, name: str, host_id: Any = None, mac: Any = None, ip: int | None = None) -> None:
        if name not in self.host_order:
            self.host_order.append(name)
        if ip is None and isinstance(host_id, str):  # early STS: "host:[IPAddr('10.0.0.1')]"
            found = [x for x in _IP_IN_TEXT.findall(host_id) if all(int(o) <= 255 for o in x.split("."))]
            ip = ip_to_int(found[0]) if len(found) == 1 else None
        if isinstance(mac, str):
            try:
                mac = mac_to_int(mac)
            except ValueError:
                mac = None
        old_mac, old_ip = self.addrs.get(name, (None, None))
        self.addrs[name] = (old_mac if old_mac is not None else mac if type(mac) is int else None,
                            old_ip if old_ip is not None else ip)

    def _prepass_link(self, rec: _Rec) -> None:
        a = self._seen_dpid(rec, "start_dpid")
        b = self._seen_dpid(rec, "end_dpid")
        pa, pb = self.as_int(rec, "start_port_no"), self.as_int(rec, "end_port_no")
        if (a, pa, b, pb) not in self.links and (b, pb, a, pa) not in self.links:
            self.links.append((a, pa, b, pb))

    def _prepass_migration(self, rec: _Rec, host_at: dict[tuple[str, int], str]) -> None:
        old = (self._seen_dpid(rec, "old_ingress_dpid"), self.as_int(rec, "old_ingress_port_no"))
        new = (self._seen_dpid(rec, "new_ingress_dpid"), self.as_int(rec, "new_ingress_port_no"))
        host_id = rec.d.get("host_id")
        if host_id is None and old in host_at:
            name = host_at[old]
        else:
            name = self.host(host_id, location=old)
        self.rec_host[rec.lineno] = name
        self._seen_host(name, host_id)
        self.first_loc.setdefault(name, old)
        host_at.pop(old, None)
        host_at[new] = name

    def _prepass_dataplane(self, rec: _Rec) -> None:
        fp = rec.d.get("fingerprint")
        if isinstance(fp, list) and fp and fp[0] == rec.cls:
            fp = fp[1:]
        if isinstance(fp, list) and len(fp) >= 3:
            if type(fp[1]) is int:
                self._seen_dpid(rec, "fingerprint", fp[1])
            elif isinstance(fp[1], str) and fp[1]:
                name = self.host(fp[1])
                self.rec_host[rec.lineno] = name
                self._seen_host(name, fp[1], fp[2])  # a host's "port" is its interface's MAC

    def infer_topology(self) -> Topology:
        topo = Topology(INFERRED_SPEC, INFERRED_SPEC)
        for dpid in sorted(self.dpids):
            topo.add_switch(f"s{dpid}", dpid)
        for a, pa, b, pb in self.links:
            try:
                topo.add_link(a, b, pa, pb)
            except NetsleuthError as exc:
                self.notes.append(f"inferred topology: left out link {a}:{pa}-{b}:{pb} ({exc.problem})")
        placed: list[str] = []
        for name in sorted(self.host_order, key=lambda h: (_host_number(h) or 0, h)):
            loc = self.first_loc.get(name)
            if loc is None:
                continue
            sw, port = loc
            if not 1 <= port <= OFPP_MAX or topo.neighbor(sw, port) is not None:
                self.notes.append(f"inferred topology: host {name} left out (its first location {sw}:{port} "
                                  "is not a free switch port)")
                continue
            mac, ip = self.addrs.get(name, (None, None))
            try:
                topo.add_host(name, mac, ip)
            except NetsleuthError:
                topo.add_host(name)
                self.notes.append(f"inferred topology: host {name} got default addresses "
                                  "(the recorded ones clash or are invalid)")
            topo.add_link(name, sw, 0, port)
            placed.append(name)
        missing = [h for h in self.host_order if h not in placed]
        if missing:
            self.notes.append("inferred topology: host(s) " + ", ".join(missing) + " are referenced but their "
                              "location is unknown (STS records host locations only in migrations); "
                              "pass the real topology to place them")
        self.notes.append(f"topology inferred from the trace ({len(topo.switches)} switches, {len(topo.hosts)} hosts, "
                          f"{len(topo.links)} links): only what the trace mentions; pass --topo for the real one")
        return topo
