"""STS events to netsleuth events (the table in :mod:`netsleuth.trace.importers.sts`): one method per
STS event class, the control connections STS made and broke, the dependencies between inputs,
and the header and report of the imported trace.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from netsleuth import __version__
from netsleuth.errors import NetsleuthError
from netsleuth.model.addr import BROADCAST_MAC, int_to_ip, int_to_mac
from netsleuth.model.packet import Arp, IPv4, Packet
from netsleuth.trace import schema as ts
from netsleuth.trace.controller_spec import ControllerSpec, Kind, join_all
from netsleuth.trace.fingerprint import of_fingerprint
from netsleuth.trace.importers.sts_names import _StsNames
from netsleuth.trace.importers.sts_read import (
    _INPUT_CLASSES,
    _NO_COUNTERPART,
    ImportReport,
    _dpfp_to_fp,
    _fail,
    _invariant_name,
    _Rec,
)


class _Importer(_StsNames):
    """STS events to netsleuth events, line by line, with their dependencies and the report."""

    def at(self, rec: _Rec) -> float:
        """The line's time in seconds since the first line, never earlier than the event before it.

        STS's replays of snapshots restart their clock mid-trace; netsleuth
        traces never go back in time, so such a line keeps its predecessor's time.
        """
        t = round(rec.time - self.t0, 6)
        last = self.events[-1].t if self.events else 0.0
        if t < last:
            self.note_once("clock", f"the STS clock goes back at line {rec.lineno} (and maybe later): such events "
                                    "keep the time of the event before them")
            return last
        return t

    def emit(self, rec: _Rec, cls: type[ts.Event], **fields: Any) -> ts.Event:
        fields.update(seq=len(self.events), t=self.at(rec))
        if cls.is_input:
            self.next_input += 1
            fields["id"] = f"i{self.next_input}"
            self.id_of_label[rec.label] = fields["id"]
            self.deps[fields["id"]] = list(fields.pop("deps", ()))
            if rec.d.get("prunable") is False:
                self.unprunable.append(fields["id"])
        ev = cls(**fields)
        self.events.append(ev)
        self.converted[rec.cls] = self.converted.get(rec.cls, 0) + 1
        return ev

    def failure(self, rec: _Rec, cls: type, key: tuple[Any, ...], **fields: Any) -> None:
        ev = self.emit(rec, cls, **fields)
        self.open_failure[key] = ev.id  # type: ignore[attr-defined]  # failures are inputs: an InputEvent

    def recovery(self, rec: _Rec, cls: type, key: tuple[Any, ...], **fields: Any) -> None:
        dep = self.open_failure.pop(key, None)
        if dep is None:
            self.note_once(f"orphan:{rec.cls}", f"{rec.cls} on line {rec.lineno} (and maybe others) follows no "
                           "matching failure; converted without a dependency")
        self.emit(rec, cls, deps=[dep] if dep else [], **fields)

    def stale_conns(self, dpid: int | None = None, controller: str | None = None) -> None:
        for key in self.conns:
            if (dpid is not None and key[0] == dpid) or (controller is not None and key[1] == controller):
                self.stale.add(key)

    def live_switches(self) -> list[str]:
        return [sw.name for sw in sorted(self.topo.switches, key=lambda sw: sw.dpid) if sw.name not in self.switch_down]

    def connect(self, rec: _Rec, switches: list[str], controllers: list[str]) -> None:
        """``switch_connected`` for each switch and controller (STS's switches connect to every controller)."""
        if not controllers:
            if rec.cls == "ConnectToControllers":
                self.skip(rec, "no controller is named in the trace or its config files: nothing to connect to")
            return
        for name in switches:
            dpid = self.topo.switch(name).dpid
            for ctl in controllers:
                self.events.append(ts.SwitchConnected(seq=len(self.events), t=self.at(rec),
                                                      dpid=dpid, conn=self.conn(dpid, ctl), controller=ctl))
        if rec.cls == "ConnectToControllers":
            self.converted[rec.cls] = self.converted.get(rec.cls, 0) + 1

    def conn(self, dpid: int, controller: str) -> int:
        key = (dpid, controller)
        if key not in self.conns or key in self.stale:
            self.next_conn += 1
            self.conns[key] = self.next_conn
            self.stale.discard(key)
        return self.conns[key]

    def convert(self, rec: _Rec) -> None:
        c = rec.cls
        how = _CONVERT.get(c)
        if how is not None:
            how(self, rec)
        elif c in _NO_COUNTERPART:
            self.skip(rec, _NO_COUNTERPART[c])
        else:
            self.skip(rec, "unknown STS event class (not defined in sts/replay_event.py)")

    def switch_event(self, rec: _Rec) -> None:
        name = self.switch(rec, "dpid")
        if rec.cls == "SwitchFailure":
            self.stale_conns(dpid=self.as_int(rec, "dpid"))
            self.failure(rec, ts.SwitchFailure, ("switch", name), switch=name)
            self.switch_down.add(name)
        else:
            self.recovery(rec, ts.SwitchRecovery, ("switch", name), switch=name)
            self.switch_down.discard(name)
            self.connect(rec, [name], [c for c in self.controller_names if c not in self.controller_down])

    def link_event(self, rec: _Rec) -> None:
        a, b = self.switch(rec, "start_dpid"), self.switch(rec, "end_dpid")
        pa, pb = self.as_int(rec, "start_port_no"), self.as_int(rec, "end_port_no")
        self.orient(a, pa, b, pb)
        # STS's links are one-way objects: a LinkFailure cuts start -> end and takes down only the
        # start's port; the end keeps sending into the link. netsleuth's one_way failure is exactly that.
        if rec.cls == "LinkRecovery" and ("link", a, pa) not in self.open_failure \
                and ("link", b, pb) in self.open_failure:
            a, pa, b, pb = b, pb, a, pa  # names the cut direction from its far end (STS itself never does)
        key = ("link", a, pa)
        fields = dict(node1=a, port1=pa, node2=b, port2=pb, one_way=True)
        if rec.cls == "LinkFailure":
            self.failure(rec, ts.LinkFailure, key, **fields)
        else:
            self.recovery(rec, ts.LinkRecovery, key, **fields)

    def controller_event(self, rec: _Rec) -> None:
        name = self.controller(rec, self.need(rec, "controller_id"))
        if rec.cls == "ControllerFailure":
            self.stale_conns(controller=name)
            self.failure(rec, ts.ControllerCrash, ("controller", name), controller=name)
            self.controller_down.add(name)
        else:
            self.recovery(rec, ts.ControllerRecovery, ("controller", name), controller=name)
            self.controller_down.discard(name)
            self.connect(rec, self.live_switches(), [name])

    def connect_all(self, rec: _Rec) -> None:
        self.connect(rec, self.live_switches(), [n for n in self.controller_names if n not in self.controller_down])

    def channel_event(self, rec: _Rec) -> None:
        sw = self.switch(rec, "dpid")
        ctl = self.controller(rec, self.need(rec, "controller_id"))
        if rec.cls == "ControlChannelBlock":
            self.failure(rec, ts.ChannelBlock, ("channel", sw, ctl), switch=sw, controller=ctl)
        else:
            self.recovery(rec, ts.ChannelUnblock, ("channel", sw, ctl), switch=sw, controller=ctl)

    def check_invariants(self, rec: _Rec) -> None:
        """Not converted, but it names the violations after it."""
        check_name = rec.d.get("invariant_name") or rec.d.get("invariant_check_name")
        self.current_check = check_name if isinstance(check_name, str) else self.config.invariant_check
        if self.current_check and self.current_check not in self.checks:
            self.checks.append(self.current_check)
        self.skip(rec, _NO_COUNTERPART[rec.cls])

    def orient(self, a: str, pa: int, b: str, pb: int) -> tuple[str, int, str, int]:
        """The link as the topology lists it (netsleuth keys links by the topology's orientation)."""
        if (a, pa, b, pb) in self.link_keys:
            return a, pa, b, pb
        if (b, pb, a, pa) in self.link_keys:
            return b, pb, a, pa
        self.note_once(f"link:{a}:{pa}:{b}:{pb}", f"link {a}:{pa}-{b}:{pb} is not in the topology; "
                       "its events keep STS's orientation")
        return a, pa, b, pb

    def migration(self, rec: _Rec) -> None:
        old_sw, old_port = self.switch(rec, "old_ingress_dpid"), self.as_int(rec, "old_ingress_port_no")
        new_sw, new_port = self.switch(rec, "new_ingress_dpid"), self.as_int(rec, "new_ingress_port_no")
        host = self.rec_host[rec.lineno]
        prev = self.last_migration.get(host)
        ev = self.emit(rec, ts.HostMigration, deps=[prev] if prev else [], host=host, old_switch=old_sw,
                       old_port=old_port, new_switch=new_sw, new_port=new_port)
        self.last_migration[host] = ev.id  # type: ignore[attr-defined]  # a HostMigration is an InputEvent
        self.moved_to.pop((old_sw, old_port), None)
        self.moved_to[(new_sw, new_port)] = (host, 0)

    def traffic(self, rec: _Rec) -> None:
        dp_event = rec.d.get("dp_event")
        if dp_event is None:
            self.skip(rec, "recorded without dp_event: the packet is in STS's separate pickled dataplane "
                           "trace (Python 2 pickle of POX objects), which netsleuth cannot read")
            return
        _, _, raw = self.iface(rec, dp_event)
        packet = Packet.from_bytes(raw)
        self.emit(rec, ts.TrafficInjection, host=self.rec_host[rec.lineno], packet=packet.to_json(),
                  dst=self.destination(packet))

    def destination(self, packet: Packet) -> str | None:
        if packet.eth_dst != BROADCAST_MAC and not (packet.eth_dst >> 40) & 1:
            for h in self.topo.hosts:
                if h.mac == packet.eth_dst:
                    return h.name
        l3 = packet.l3
        ip = l3.dst if isinstance(l3, IPv4) else l3.tpa if isinstance(l3, Arp) else None
        if ip is not None:
            for h in self.topo.hosts:
                if h.ip == ip:
                    return h.name
        return None

    def drop(self, rec: _Rec) -> None:
        raw = self.need(rec, "fingerprint")
        fp_list = list(raw) if isinstance(raw, list) else None
        if fp_list and fp_list[0] == "DataplaneDrop":
            fp_list = fp_list[1:]
        if not fp_list or len(fp_list) < 3:
            raise _fail(self.where(rec), f"DataplaneDrop {rec.label}: fingerprint must be "
                        "[\"DataplaneDrop\", {packet fields}, dpid, port]", "restore the fingerprint as STS wrote it")
        fp = _dpfp_to_fp(fp_list[0])
        if fp is None:
            raise _fail(self.where(rec), f"DataplaneDrop {rec.label}: {fp_list[0]!r} is not an STS packet "
                        "fingerprint", 'use {"dl_src", "dl_dst", "nw_src", "nw_dst"}, {"class": "arp"|"lldp"} '
                        'or {"dl_type": N}')
        if fp[0] == "eth":
            self.note_once("ethfp", "a DataplaneDrop names a non-IP packet only by its ethertype; its fingerprint "
                                    "('eth', type) cannot match a netsleuth ('eth', type, src, dst) fingerprint")
        where, port = fp_list[1], fp_list[2]
        if type(where) is int:
            node, nport = self.switch(rec, "fingerprint", where), self.as_int(rec, "fingerprint", port)
        elif isinstance(where, str) and where:
            node, nport = self.rec_host[rec.lineno], 0
        else:
            raise _fail(self.where(rec), f"DataplaneDrop {rec.label}: fingerprint names no switch or host",
                        "restore the fingerprint's dpid and port")
        # STS names the sending end (the DpPacketOut's node and port); netsleuth
        # drops on the link *into* (node, port): use the far end when known.
        far = self.moved_to.get((node, nport)) or (self.topo.neighbor(node, nport) if node in self.topo else None)
        if far is not None:
            node, nport = far
        else:
            self.note_once("dropend", f"DataplaneDrop {rec.label} (and maybe others): the link out of "
                                      f"{node}:{nport} is not in the topology, so the drop names the sending end")
        self.emit(rec, ts.DataplaneDrop, node=node, port=nport, fp=fp)

    def openflow(self, rec: _Rec) -> None:
        dpid = self.as_int(rec, "dpid")
        self.switch(rec, "dpid")
        ctl = self.controller(rec, self.need(rec, "controller_id"))
        b64 = rec.d.get("b64_packet")
        if not b64:
            self.skip(rec, "recorded without b64_packet (STS before mid-2013 kept only a fingerprint of "
                           "each OpenFlow message)")
            return
        if self.decode is None:
            self.skip(rec, "no OpenFlow decoder was given (pass decode_openflow=...; the CLI does)")
            return
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: b64_packet is not base64",
                        "restore the message bytes as STS wrote them, or delete b64_packet") from None
        try:
            msg = self.decode(data)
            if not isinstance(msg, dict):
                raise TypeError(f"the decoder returned {type(msg).__name__}, not the codec's JSON form")
            fp = of_fingerprint(msg)
        except Exception as exc:  # noqa: BLE001 -- a caller-supplied decoder: report, never abort
            problem = exc.problem if isinstance(exc, NetsleuthError) else str(exc)
            if len(self.of_examples) < 3:
                self.of_examples.append(f"line {rec.lineno}: {problem}")
            self.skip(rec, "the OpenFlow bytes could not be decoded")
            return
        cls = ts.ControlToSwitch if rec.cls == "ControlMessageReceive" else ts.ControlToController
        self.emit(rec, cls, conn=self.conn(dpid, ctl), controller=ctl, dpid=dpid, msg=msg, fp=fp)

    def violation(self, rec: _Rec) -> None:
        raw = self.need(rec, "violations")
        if not isinstance(raw, list):
            raise _fail(self.where(rec), f"InvariantViolation {rec.label}: \"violations\" must be a list",
                        'write e.g. "violations": ["c1"]')
        viols = [v if isinstance(v, str) else json.dumps(v) for v in raw]
        persistent = rec.d.get("persistent")
        if not isinstance(persistent, bool):
            self.note_once("persist", "InvariantViolation line(s) without \"persistent\" (early STS) were "
                                      "imported as transient")
            persistent = False
        text = "\n".join(viols)
        hosts = tuple(h.name for h in self.topo.hosts
                      if re.search(rf"(?<![\d.]){re.escape(int_to_ip(h.ip))}(?!\d)", text)
                      or re.search(rf"(?<![0-9a-f:]){re.escape(int_to_mac(h.mac))}(?![0-9a-f:])", text, re.I))
        first = " ".join(viols[0].split())[:200] if viols else ""
        message = first if len(viols) == 1 else f"{len(viols)} violations; first: {first}"
        details = {"sts_label": rec.label, "sts_round": rec.d.get("round") if type(rec.d.get("round")) is int
                   else None, "sts_invariant": self.current_check, "violations": viols}
        self.controllers_exited(rec, viols)
        self.emit(rec, ts.Violation, invariant=_invariant_name(self.current_check), message=message,
                  persistent=persistent, hosts=hosts, switches=(), details=details)

    def controllers_exited(self, rec: _Rec, viols: list[str]) -> None:
        """Controllers STS found down by asking their processes, that no input crashed: they exited.

        STS's ``check_liveness`` (and the "all controllers dead" test STS runs
        before every other check) answers with controller labels, read from
        each controller process's status. A controller that the trace never
        crashed but STS found down died on its own (the ONOS runs' bug); the
        trace holds no other record of that, so it is kept as a
        ``controller_event`` "exited" at the time STS looked.
        """
        check = (self.current_check or "").rsplit(".", 1)[-1]
        named = [v for v in viols if v in self.controller_names]
        if not named or (check != "check_liveness" and len(set(named)) != len(self.controller_names)):
            return
        if len(named) != len(viols):
            return
        for ctl in dict.fromkeys(named):
            if ctl in self.controller_down:
                continue
            self.controller_down.add(ctl)
            self.stale_conns(controller=ctl)
            self.events.append(ts.ControllerEvent(
                seq=len(self.events), t=self.at(rec), controller=ctl, what="exited",
                detail=f"STS's liveness check found the {ctl} process down (InvariantViolation {rec.label}); "
                       "no input crashed it"))

    def link_dependent_labels(self) -> None:
        """STS ``A.dependent_labels = [B]`` (prune A => prune B) as ``B.deps`` containing A."""
        seq = {e.id: e.seq for e in self.events if e.is_input}  # type: ignore[attr-defined]  # is_input: InputEvents
        dropped = flipped = 0
        for rec in self.records:
            for other in rec.d.get("dependent_labels") or ():
                a, b = self.id_of_label.get(rec.label), self.id_of_label.get(other)
                if a is None or b is None:
                    dropped += 1
                    continue
                if a == b:
                    continue
                if seq[b] < seq[a]:  # deps point backwards in the trace
                    a, b = b, a
                    flipped += 1
                if a not in self.deps[b]:
                    self.deps[b].append(a)
        if dropped:
            self.notes.append(f"{dropped} STS dependent_labels link(s) involve an event that was not converted; "
                              "dropped")
        if flipped:
            self.notes.append(f"{flipped} STS dependent_labels link(s) pointed at an earlier event; recorded on the "
                              "later event (deps always point backwards)")
        for i, ev in enumerate(self.events):
            if ev.is_input:
                # is_input: an InputEvent
                deps = sorted(set(self.deps[ev.id]), key=seq.__getitem__)  # type: ignore[attr-defined]
                if deps:
                    self.events[i] = replace(ev, deps=tuple(deps))  # type: ignore[call-arg]  # an InputEvent

    def run(self) -> ImportReport:
        self.collect_controllers()
        self.prepass()
        self.topo = self.given if self.given is not None else self.infer_topology()
        if self.config.files:
            self.notes.append(f"read the experiment's config ({', '.join(self.config.files)}) without running it")
        self.notes.extend(self.config.notes)
        self.link_keys = {(lk.node1, lk.port1, lk.node2, lk.port2) for lk in self.topo.links}
        if not any(rec.cls == "ConnectToControllers" for rec in self.records):
            # STS before it recorded ConnectToControllers still connected every switch at start-up
            self.connect(self.records[0], self.live_switches(), list(self.controller_names))
            if self.controller_names:
                self.notes.append("the trace has no ConnectToControllers line; every switch was connected to every "
                                  "controller at the start, as STS's start-up did")
        for rec in self.records:
            self.convert(rec)
        self.link_dependent_labels()
        if self.of_examples:
            self.notes.append("OpenFlow messages the decoder rejected, e.g. " + "; ".join(self.of_examples))
        if self.host_alias:
            self.notes.append("STS host ids renamed: " + ", ".join(f"{k!r} -> {v}" for k, v in self.host_alias.items()))
        if self.controller_alias:
            self.notes.append("STS controller ids [ip, port] named ip:port: "
                              + ", ".join(sorted(set(self.controller_alias.values()))))
        if self.unprunable:
            self.notes.append(f"{len(self.unprunable)} input(s) STS marked prunable=false (initialization); "
                              "listed in header.extra.sts.unprunable_inputs")
        dropped_inputs = sum(n for c, n in self.skipped.items() if c in _INPUT_CLASSES
                             and c not in ("WaitTime", "CheckInvariants"))
        if dropped_inputs:
            self.notes.append(f"{dropped_inputs} STS input event(s) could not be converted (see skipped)")
        sts_extra = {
            "topology_inferred": self.given is None,
            "hosts": dict(self.host_alias),
            "controllers": dict(self.controller_alias),
            "input_labels": {label: i for label, i in self.id_of_label.items()},
            "unprunable_inputs": list(self.unprunable),
            "invariant_checks": list(self.checks),
            "config": self.config.to_json(),
        }
        header = ts.TraceHeader(
            topology=self.topo.to_json(), topology_spec=self.topo.spec,
            # STS's controller names (c1, [ip, port]) with no kind: replaying the trace needs --controller
            controller=join_all(ControllerSpec(Kind.APP, name=n) for n in self.controller_names),
            seed=None, tool_version=__version__,
            command=f"netsleuth import sts {self.path.name}",
            extra={"imported_from": "sts", "source": self.path.name, "sts": sts_extra})
        return ImportReport(trace=ts.Trace(header, self.events), converted=self.converted, skipped=self.skipped,
                            notes=self.notes, reasons=self.reasons, topology_inferred=self.given is None)


#: How each STS class that has a netsleuth counterpart is converted (the rest are skipped with the reason).
_CONVERT: dict[str, Callable[[_Importer, _Rec], None]] = {
    "SwitchFailure": _Importer.switch_event, "SwitchRecovery": _Importer.switch_event,
    "LinkFailure": _Importer.link_event, "LinkRecovery": _Importer.link_event,
    "ControllerFailure": _Importer.controller_event, "ControllerRecovery": _Importer.controller_event,
    "ConnectToControllers": _Importer.connect_all,
    "ControlChannelBlock": _Importer.channel_event, "ControlChannelUnblock": _Importer.channel_event,
    "HostMigration": _Importer.migration, "TrafficInjection": _Importer.traffic, "DataplaneDrop": _Importer.drop,
    "ControlMessageReceive": _Importer.openflow, "ControlMessageSend": _Importer.openflow,
    "CheckInvariants": _Importer.check_invariants, "InvariantViolation": _Importer.violation,
}
