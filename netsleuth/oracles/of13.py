"""Open vSwitch as an oracle for OpenFlow 1.3 pipelines (multi-table, groups, meters).

Built on the 1.0 oracle's sandbox (``oracles/ovs.py``: private userspace
ovsdb-server + ovs-vswitchd, dummy datapath, unixctl JSON-RPC for traces),
with the bridge speaking OpenFlow 1.3 and rules, groups and meters
installed by ``ovs-ofctl -O OpenFlow13`` (add-flows / add-groups /
add-meters) in one batch each.

A trace's "Datapath actions:" line is the ground truth of what leaves the
switch; it is replayed on the header values OVS parsed ("Flow:") to get the
headers of every copy at the moment it is sent.  Headers are compared as a
``HeaderState``: Ethernet addresses, the VLAN tag stack (TPID, VID, PCP),
the MPLS label stack, the ethertype, and -- while no MPLS label hides them
-- the L3/L4 fields OVS tracks.  ``clone(...)`` (how OVS isolates group
buckets) restores the state after its body.  Recirculation (what OVS does
after pop_mpls when a later action needs the inner headers) cannot be
followed by ``ofproto/trace`` and is reported as OvsTraceError.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.oracles.ovs import OvsSandbox, OvsSandboxError
from netsleuth.oracles.ovs_text import OvsRuleError, OvsTraceError, _split_top

L3_KEYS = ("nw_src", "nw_dst", "ipv6_src", "ipv6_dst", "ipv6_label", "nw_dscp", "nw_ecn", "nw_ttl", "nw_proto",
           "tp_src", "tp_dst", "arp_op", "arp_sha", "arp_tha", "nd_target", "nd_sll", "nd_tll")
"""The L3/L4 values compared per output (OVS's flow names; ICMP type/code are tp_src/tp_dst)."""

_PROTO_TYPES = {"ip": 0x0800, "tcp": 0x0800, "udp": 0x0800, "icmp": 0x0800, "sctp": 0x0800, "igmp": 0x0800,
                "ipv6": 0x86DD, "tcp6": 0x86DD, "udp6": 0x86DD, "icmp6": 0x86DD, "sctp6": 0x86DD,
                "arp": 0x0806, "rarp": 0x8035, "mpls": 0x8847, "mplsm": 0x8848}


@dataclass(frozen=True, slots=True)
class HeaderState:
    """The headers of one copy of a packet, in a form both OVS and the model can produce."""

    eth_src: int
    eth_dst: int
    eth_type: int
    tags: tuple[tuple[int, int, int], ...] = ()            # (tpid, vid, pcp), outermost first
    mpls: tuple[tuple[int, int, int, int], ...] = ()       # (label, tc, bos, ttl), top first
    l3: tuple[tuple[str, int], ...] | None = ()            # None: unknown (under a label OVS never saw into)


@dataclass(frozen=True, slots=True)
class Copy13:
    """One copy leaving the switch: port (OFPP_CONTROLLER for a packet-in) and headers."""

    port: int
    headers: HeaderState
    reason: int = -1
    max_len: int = -1


@dataclass(frozen=True, slots=True)
class Decision13:
    initial: HeaderState
    copies: tuple[Copy13, ...]
    trace_text: str = field(default="", compare=False, repr=False)


def _num(text: str) -> int:
    if text.count(":") == 5 and "::" not in text and len(text) == 17:
        return int(text.replace(":", ""), 16)
    if ":" in text:
        return int(ipaddress.IPv6Address(text))
    if text.count(".") == 3:
        return int(ipaddress.IPv4Address(text))
    return int(text, 0)


def _masked_num(old: int, text: str) -> int:
    value, _, mask = text.partition("/")
    if not mask:
        return _num(value)
    m = _num(mask)
    return (old & ~m) | (_num(value) & m)


# --------------------------------------------------------------------- Flow: line
def parse_flow13(flow: str, tpids: tuple[int, ...] = ()) -> dict[str, Any]:
    """A mutable header state from a trace's ``Flow:`` line.

    OVS does not print VLAN TPIDs there; ``tpids`` (outermost first) supplies
    them, 0x8100 where not given.
    """
    tokens = _split_top(flow)
    kv: dict[str, str] = {}
    eth_type = None
    for t in tokens:
        key, sep, value = t.partition("=")
        if sep:
            kv[key] = value
        elif t in _PROTO_TYPES:
            eth_type = _PROTO_TYPES[t]
    if "dl_type" in kv:
        eth_type = int(kv["dl_type"], 0)
    tags: list[tuple[int, int, int]] = []
    for i, suffix in enumerate(("", "1")):
        tpid = tpids[i] if i < len(tpids) else 0x8100
        if f"dl_vlan{suffix}" in kv:
            tags.append((tpid, int(kv[f"dl_vlan{suffix}"]), int(kv.get(f"dl_vlan_pcp{suffix}", "0"))))
        elif f"vlan_tci{suffix}" in kv:
            tci = int(kv[f"vlan_tci{suffix}"], 0)
            if tci & 0x1000:
                tags.append((tpid, tci & 0xFFF, tci >> 13))
    state: dict[str, Any] = {"eth_src": _num(kv.get("dl_src", "0")), "eth_dst": _num(kv.get("dl_dst", "0")),
                             "eth_type": eth_type if eth_type is not None else 0, "tags": tags, "mpls": [],
                             "l3": {}}
    if eth_type in (0x8847, 0x8848):
        if "mpls_label" in kv:
            state["mpls"] = [(int(kv["mpls_label"], 0), int(kv.get("mpls_tc", "0"), 0),
                              int(kv.get("mpls_bos", "1"), 0), int(kv.get("mpls_ttl", "0"), 0))]
        state["l3"] = None
        return state
    l3: dict[str, int] = {}
    names = {"nw_src": "nw_src", "nw_dst": "nw_dst", "ipv6_src": "ipv6_src", "ipv6_dst": "ipv6_dst",
             "ipv6_label": "ipv6_label", "nw_ecn": "nw_ecn", "nw_ttl": "nw_ttl", "nw_proto": "nw_proto",
             "tp_src": "tp_src", "tp_dst": "tp_dst", "icmp_type": "tp_src", "icmp_code": "tp_dst",
             "icmpv6_type": "tp_src", "icmpv6_code": "tp_dst", "arp_op": "arp_op", "arp_spa": "nw_src",
             "arp_tpa": "nw_dst", "arp_sha": "arp_sha", "arp_tha": "arp_tha", "nd_target": "nd_target",
             "nd_sll": "nd_sll", "nd_tll": "nd_tll"}
    for key, name in names.items():
        if key in kv:
            l3[name] = _num(kv[key])
    if "nw_tos" in kv:
        l3["nw_dscp"] = int(kv["nw_tos"], 0) >> 2
    if eth_type == 0x0800 or eth_type == 0x86DD:
        # OVS implies the protocol by the keyword (tcp, udp6, ...), not nw_proto=.
        proto = {"tcp": 6, "tcp6": 6, "udp": 17, "udp6": 17, "icmp": 1, "icmp6": 58, "sctp": 132, "sctp6": 132}
        for t in tokens:
            if t in proto:
                l3["nw_proto"] = proto[t]
    state["l3"] = l3
    return state


def freeze(state: Mapping[str, Any]) -> HeaderState:
    l3 = state["l3"]
    return HeaderState(state["eth_src"], state["eth_dst"], state["eth_type"], tuple(state["tags"]),
                       tuple(state["mpls"]), None if l3 is None else tuple(sorted(l3.items())))


# --------------------------------------------------------------------- datapath actions
_SET_RE = re.compile(r"^set\((\w+)\((.*)\)\)$")
_CALL_RE = re.compile(r"^(\w+)\((.*)\)$")
_SET_ATTRS: dict[str, dict[str, str]] = {
    "ipv4": {"src": "nw_src", "dst": "nw_dst", "ttl": "nw_ttl"},
    "ipv6": {"src": "ipv6_src", "dst": "ipv6_dst", "label": "ipv6_label", "hlimit": "nw_ttl"},
    "tcp": {"src": "tp_src", "dst": "tp_dst"}, "udp": {"src": "tp_src", "dst": "tp_dst"},
    "sctp": {"src": "tp_src", "dst": "tp_dst"}, "icmp": {"type": "tp_src", "code": "tp_dst"},
    "icmpv6": {"type": "tp_src", "code": "tp_dst"},
    "arp": {"sip": "nw_src", "tip": "nw_dst", "op": "arp_op", "sha": "arp_sha", "tha": "arp_tha"},
    "nd": {"target": "nd_target", "sll": "nd_sll", "tll": "nd_tll"},
}


def _kv(body: str) -> dict[str, str]:
    return dict(item.partition("=")[::2] for item in _split_top(body))


def replay(text: str, state: dict[str, Any], dp_to_of: Mapping[int, int]) -> list[Copy13]:
    """Replay datapath actions on ``state`` (changed in place); one Copy13 per copy sent."""
    copies: list[Copy13] = []
    for action in _split_top(text):
        if action == "drop":
            continue
        if action.isdigit():
            port = dp_to_of.get(int(action))
            if port is None:
                raise OvsTraceError(f"datapath port {action} is not on the bridge", "recreate the sandbox")
            copies.append(Copy13(port, freeze(state)))
            continue
        if action == "pop_vlan":
            state["tags"] = state["tags"][1:]
            continue
        m = _SET_RE.match(action)
        if m:
            _apply_set13(state, m.group(1), m.group(2), action)
            continue
        m = _CALL_RE.match(action)
        if m is None:
            raise OvsTraceError(f"unexpected datapath action {action!r}", "extend netsleuth.oracles.of13.replay")
        name, body = m.groups()
        kv = _kv(body)
        if name == "push_vlan":
            tag = (int(kv.get("tpid", "0x8100"), 0), int(kv.get("vid", "0")), int(kv.get("pcp", "0")))
            state["tags"] = [tag, *state["tags"]]
        elif name == "push_mpls":
            lse = (int(kv["label"]), int(kv["tc"]), int(kv["bos"]), int(kv["ttl"]))
            state["mpls"] = [lse, *state["mpls"]]
            state["eth_type"] = int(kv["eth_type"], 0)
        elif name == "pop_mpls":
            state["mpls"] = state["mpls"][1:]
            state["eth_type"] = int(kv["eth_type"], 0)
        elif name == "clone":
            saved = {k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
                     for k, v in state.items()}
            copies += replay(body, state, dp_to_of)
            state.clear()
            state.update(saved)
        elif name == "userspace" and "controller(" in body:
            ctl = _kv(re.search(r"controller\((.*?)\)", body).group(1))  # type: ignore[union-attr]
            copies.append(Copy13(ofp.OFPP_CONTROLLER, freeze(state), int(ctl.get("reason", "-1")),
                                 int(ctl.get("max_len", "-1"))))
        elif name == "meter":
            continue  # metering happens in the datapath; a trace cannot exceed a rate
        elif name == "recirc":
            raise OvsTraceError("OVS recirculated the packet (after pop_mpls); ofproto/trace cannot follow it",
                                "generate pipelines that need no inner header after pop_mpls")
        else:
            raise OvsTraceError(f"unexpected datapath action {action!r}", "extend netsleuth.oracles.of13.replay")
    return copies


def _apply_set13(state: dict[str, Any], key: str, body: str, action: str) -> None:
    kv = _kv(body)
    if key == "eth":
        for attr, name in (("src", "eth_src"), ("dst", "eth_dst")):
            if attr in kv:
                state[name] = _masked_num(state[name], kv[attr])
        return
    if key == "mpls":
        label, tc, bos, ttl = state["mpls"][0]
        if "lse" in kv:
            w = _masked_num((label << 12) | (tc << 9) | (bos << 8) | ttl, kv["lse"])
            label, tc, bos, ttl = w >> 12, (w >> 9) & 7, (w >> 8) & 1, w & 0xFF
        label = _masked_num(label, kv["label"]) if "label" in kv else label
        tc = _masked_num(tc, kv["tc"]) if "tc" in kv else tc
        ttl = _masked_num(ttl, kv["ttl"]) if "ttl" in kv else ttl
        bos = _masked_num(bos, kv["bos"]) if "bos" in kv else bos
        state["mpls"] = [(label, tc, bos, ttl), *state["mpls"][1:]]
        return
    l3 = state["l3"]
    if l3 is None:
        raise OvsTraceError(f"OVS set {key} fields OVS never parsed ({action})", "check the generated rules")
    for tos_key in ("tos", "tclass"):
        if tos_key in kv:
            tos = _masked_num((l3.get("nw_dscp", 0) << 2) | l3.get("nw_ecn", 0), kv[tos_key])
            l3["nw_dscp"], l3["nw_ecn"] = tos >> 2, tos & 3
    attrs = _SET_ATTRS.get(key)
    if attrs is None:
        raise OvsTraceError(f"unexpected datapath action {action!r}", "extend netsleuth.oracles.of13._SET_ATTRS")
    for attr, value in kv.items():
        field_name = attrs.get(attr)
        if field_name is not None:
            l3[field_name] = _masked_num(l3.get(field_name, 0), value)


def parse_trace13(text: str, dp_to_of: Mapping[int, int], tpids: tuple[int, ...] = ()) -> Decision13:
    flow = re.search(r"^Flow: (.*)$", text, re.M)
    actions = re.search(r"^Datapath actions: (.*)$", text, re.M)
    if flow is None or actions is None:
        raise OvsTraceError("ofproto/trace printed no Flow:/Datapath actions: line", "check the packet",
                            details=text)
    state = parse_flow13(flow.group(1), tpids)
    initial = freeze(state)
    try:
        copies = tuple(replay(actions.group(1), state, dp_to_of))
    except OvsTraceError as exc:
        raise OvsTraceError(exc.problem, exc.fix, details=text) from None
    return Decision13(initial, copies, text)


# --------------------------------------------------------------------- sandbox
class _OfReader:
    """OpenFlow message framing on a stream socket: (type, xid, body) one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buf = b""

    def next(self) -> tuple[int, int, bytes]:
        while True:
            if len(self._buf) >= 8:
                _, mtype, length, xid = struct.unpack_from("!BBHI", self._buf)
                if len(self._buf) >= length:
                    body, self._buf = self._buf[8:length], self._buf[length:]
                    return mtype, xid, body
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise OvsSandboxError("ovs-vswitchd closed the OpenFlow connection",
                                      "see ovs-vswitchd.log in the sandbox")
            self._buf += chunk


class OvsSandbox13(OvsSandbox):
    """An OvsSandbox whose bridge speaks OpenFlow 1.3, parses two VLAN tags, and takes groups and meters."""

    def __init__(self, workdir: Any = None, *, ports: int = 4, **kw: Any) -> None:
        super().__init__(workdir, ports=ports, openflow="OpenFlow13", **kw)
        self._meters_installed = False

    def _start_daemons(self, schema: Any) -> None:
        super()._start_daemons(schema)
        # OpenFlow 1.3 matches eth_type after all tags; OVS parses only the
        # outer one unless vlan-limit allows more (0 = its maximum, two).
        self._vsctl("set", "Open_vSwitch", ".", "other_config:vlan-limit=0")
        # OpenFlow 1.5 only to give SELECT groups selection_method=hash (see replace_pipeline).
        self._vsctl("set", "bridge", self.bridge, "protocols=OpenFlow13,OpenFlow15")

    def _ofctl15(self, *args: str, stdin: str | None = None) -> Any:
        target = f"unix:{self.dir / (self.bridge + '.mgmt')}"  # type: ignore[operator]
        return self._run("ovs-ofctl", "-O", "OpenFlow15", args[0], target, *args[1:], stdin=stdin)

    def replace_pipeline(self, flows: Iterable[str], groups: Iterable[str] = (), meters: Iterable[str] = ()) -> None:
        """Make the switch hold exactly these flows, groups and meters (ovs-ofctl text lines).

        Flows and groups go in one ``ovs-ofctl bundle`` (delete all, then add):
        one process and one connection where separate del-flows, del-groups,
        add-groups and add-flows took four, which was most of the CPU of a
        differential run of a few hundred pipelines. Bundles carry no meters,
        so meters are replaced first, one ``add-meter`` each (ovs-ofctl has no
        batch form).
        """
        flow_lines, group_lines, meter_lines = list(flows), list(groups), list(meters)
        # OVS hashes SELECT groups in the datapath by default (dp_hash, then a
        # recirculation ofproto/trace cannot follow); the OpenFlow 1.5 group
        # property selection_method=hash makes it choose in userspace. The
        # bundle is sent as OpenFlow 1.5 for that; the flows and groups are
        # plain OpenFlow 1.3 otherwise.
        bundle = ["flow delete", "group delete group_id=all"]
        bundle += ["group add " + g.replace("type=select,", "type=select,selection_method=hash,") for g in group_lines]
        bundle += ["flow add " + f for f in flow_lines]
        try:
            if self._meters_installed:
                self._ofctl("del-meters")
            for line in meter_lines:  # before the flows that name them
                self._ofctl("add-meter", line)
            self._meters_installed = bool(meter_lines)
            self._ofctl15("bundle", "-", stdin="\n".join(bundle) + "\n")
        except OvsSandboxError as exc:
            raise OvsRuleError(f"ovs-ofctl rejected the pipeline: {exc.problem}",
                               "render only OpenFlow 1.3 matches/instructions OVS supports",
                               details="\n".join([*group_lines, *meter_lines, *flow_lines])) from None
        self._wait_for_ofctl_disconnect()

    def set_port_up(self, port: int, up: bool) -> None:
        """Take a dummy port's link up or down (FAST_FAILOVER watches liveness)."""
        self.appctl("netdev-dummy/set-admin-state", f"p{port}", "up" if up else "down")

    def openflow_errors(self, messages: Iterable[bytes]) -> list[tuple[int, int] | None]:
        """Send each OpenFlow 1.3 message, each followed by a barrier, on one fresh connection.

        Returns, per message, the (type, code) of the ERROR it drew, or None.
        This is how a controller sees the switch reject a request, so the
        model's OFError codes can be compared with OVS's.
        """
        assert self.dir is not None
        path = self.dir / f"{self.bridge}.mgmt"
        dir_fd = os.open(path.parent, os.O_RDONLY)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(20)
        results: list[tuple[int, int] | None] = []
        try:
            sock.connect(f"/proc/self/fd/{dir_fd}/{path.name}")
            sock.sendall(struct.pack("!BBHI", ofp.OFP_VERSION, ofp.OFPT_HELLO, 8, 1))
            reader = _OfReader(sock)
            for i, msg in enumerate(messages):
                xid, barrier_xid = 0x1000 + i, 0x2000 + i
                sock.sendall(msg[:4] + struct.pack("!I", xid) + msg[8:])
                sock.sendall(struct.pack("!BBHI", ofp.OFP_VERSION, ofp.OFPT_BARRIER_REQUEST, 8, barrier_xid))
                error = None
                while True:
                    mtype, mxid, body = reader.next()
                    if mtype == ofp.OFPT_ERROR and mxid == xid:
                        error = struct.unpack_from("!HH", body)
                    elif mtype == ofp.OFPT_BARRIER_REPLY and mxid == barrier_xid:
                        break
                results.append(error)
        finally:
            sock.close()
            os.close(dir_fd)
        self._wait_for_ofctl_disconnect()
        return results

    def openflow_request(self, message: bytes) -> list[Any]:
        """Send one OpenFlow 1.3 request (e.g. a multipart request); every reply to it, parsed by os-ken.

        Replies are os-ken message objects in arrival order (a multipart
        reply may come in several parts); an ERROR is returned like any reply.
        """
        from os_ken.ofproto import ofproto_parser, ofproto_protocol

        assert self.dir is not None
        path = self.dir / f"{self.bridge}.mgmt"
        dir_fd = os.open(path.parent, os.O_RDONLY)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(20)
        dp = ofproto_protocol.ProtocolDesc(ofp.OFP_VERSION)
        replies: list[Any] = []
        try:
            sock.connect(f"/proc/self/fd/{dir_fd}/{path.name}")
            sock.sendall(struct.pack("!BBHI", ofp.OFP_VERSION, ofp.OFPT_HELLO, 8, 1))
            xid, barrier_xid = 0x3000, 0x3001
            sock.sendall(message[:4] + struct.pack("!I", xid) + message[8:])
            sock.sendall(struct.pack("!BBHI", ofp.OFP_VERSION, ofp.OFPT_BARRIER_REQUEST, 8, barrier_xid))
            reader = _OfReader(sock)
            while True:
                mtype, mxid, body = reader.next()
                if mtype == ofp.OFPT_BARRIER_REPLY and mxid == barrier_xid:
                    break
                if mxid == xid:
                    raw = struct.pack("!BBHI", ofp.OFP_VERSION, mtype, 8 + len(body), mxid) + body
                    replies.append(ofproto_parser.msg(dp, ofp.OFP_VERSION, mtype, len(raw), mxid, raw))
        finally:
            sock.close()
            os.close(dir_fd)
        self._wait_for_ofctl_disconnect()
        return replies

    def trace_packet_out13(self, in_port: int, frame_bytes: bytes, actions: str,
                           tpids: tuple[int, ...] = ()) -> Decision13:
        """What a PACKET_OUT of these bytes with these actions (ovs-ofctl syntax) does."""
        port = {ofp.OFPP_CONTROLLER: "controller", ofp.OFPP_LOCAL: "LOCAL"}.get(in_port, str(in_port))
        text = self.appctl("ofproto/trace-packet-out", self.bridge, f"in_port={port}", frame_bytes.hex(), actions)
        ports = {dp: (ofp.OFPP_LOCAL if of == 0xFFFE else of) for dp, of in self.dp_to_of.items()}
        return parse_trace13(text, ports, tpids)

    def trace13(self, in_port: int, frame_bytes: bytes, tpids: tuple[int, ...] = ()) -> Decision13:
        """What the bridge does with these wire bytes arriving on ``in_port`` (ports in 1.3 numbering)."""
        text = self.appctl("ofproto/trace", self.bridge, f"in_port={in_port}", frame_bytes.hex())
        # dpif/show prints the 16-bit OFPP_LOCAL of OpenFlow 1.0; 1.3 numbers it 0xfffffffe.
        ports = {dp: (ofp.OFPP_LOCAL if of == 0xFFFE else of) for dp, of in self.dp_to_of.items()}
        return parse_trace13(text, ports, tpids)


__all__ = ["Copy13", "Decision13", "HeaderState", "L3_KEYS", "OvsSandbox13", "freeze", "parse_flow13",
           "parse_trace13", "replay"]
