"""The symbolic packet handed to packet_in, its header variables, and the domain constraints.

Header fields of :class:`netsleuth.model.packet.Packet` become z3
bit-vectors of the field's wire width.  The app receives a
:class:`SymPacket`, a subclass of the model's ``Packet`` whose
``eth_src``/``eth_dst``/``eth_type`` are :class:`SymInt` and whose ``l3``
and ``l4`` are computed when read: reading ``packet.l3`` branches on
``eth_type`` (ARP, IPv4 or neither) and ``packet.l4`` on the IPv4 protocol,
so the header layout an app sees is always consistent with the symbolic
ethertype, and each layout is a path the engine can negate its way to.  The
records it returns are the model's own ``Arp``/``IPv4``/``TCP``/``UDP``/
``ICMP`` (``type(l3) is Arp`` holds) with symbolic fields.

:class:`Domain` holds the constraints NICE applied as a filter after the
fact (it kept 2 of 12 inputs), asserted in the solver instead: the source
MAC (and ARP sender / IPv4 source) is the sending host's, the destination
MAC is another known host or broadcast, the ethertype is an allowed one.
:meth:`Domain.accepts` is the same rule written independently over a
concrete packet: the generated-vs-kept count is that check's verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import z3

from netsleuth.model.addr import BROADCAST_MAC
from netsleuth.model.packet import (
    ETH_ARP,
    ETH_IPV4,
    ICMP,
    PROTO_ICMP,
    PROTO_TCP,
    PROTO_UDP,
    TCP,
    TCP_SYN,
    UDP,
    Arp,
    IPv4,
    Packet,
)
from netsleuth.nice.concolic.sym import SymInt, Tracer

# name -> width in bits (the wire width of the header field)
FIELDS: dict[str, int] = {
    "eth_src": 48, "eth_dst": 48, "eth_type": 16,
    "arp_op": 16, "arp_sha": 48, "arp_spa": 32, "arp_tha": 48, "arp_tpa": 32,
    "ip_src": 32, "ip_dst": 32, "ip_proto": 8,
    "tp_src": 16, "tp_dst": 16, "tcp_flags": 12,
    "icmp_type": 8, "icmp_code": 8,
}


class HostLike(Protocol):
    name: str
    mac: int
    ip: int


def header_vars(ctx: z3.Context | None = None) -> dict[str, z3.BitVecRef]:
    """Fresh z3 variables, one per header field (names are stable: they key the model)."""
    return {name: z3.BitVec(name, w, ctx) for name, w in FIELDS.items()}


def _one_of(var: z3.BitVecRef, values: Sequence[int]) -> z3.BoolRef:
    vals = sorted(set(values))
    if not vals:
        return z3.BoolVal(False, var.ctx)
    return z3.Or(*[var == v for v in vals])


@dataclass(frozen=True)
class Domain:
    """Which packets a host may send (see the module docstring).

    ``extra_macs``/``extra_ips``: destinations that are not hosts but that
    hosts do address (a load balancer's virtual MAC and IP).
    """

    eth_types: tuple[int, ...] = (ETH_ARP, ETH_IPV4)
    ip_protos: tuple[int, ...] = (PROTO_ICMP, PROTO_TCP, PROTO_UDP)
    arp_ops: tuple[int, ...] = (1, 2)
    src_is_sender: bool = True
    dst_is_known: bool = True
    broadcast: bool = True
    extra_macs: tuple[int, ...] = ()
    extra_ips: tuple[int, ...] = ()

    def dst_macs(self, sender: HostLike, known: Sequence[HostLike]) -> list[int]:
        out = [h.mac for h in known if h.mac != sender.mac] + list(self.extra_macs)
        if self.broadcast:
            out.append(BROADCAST_MAC)
        return sorted(set(out))

    def dst_ips(self, sender: HostLike, known: Sequence[HostLike]) -> list[int]:
        return sorted({h.ip for h in known if h.ip != sender.ip} | set(self.extra_ips))

    def constraints(self, v: dict[str, z3.BitVecRef], sender: HostLike,
                    known: Sequence[HostLike]) -> list[z3.BoolRef]:
        out = [_one_of(v["eth_type"], self.eth_types)]
        if self.src_is_sender:
            out.append(v["eth_src"] == sender.mac)
        if self.dst_is_known:
            out.append(_one_of(v["eth_dst"], self.dst_macs(sender, known)))
        else:
            out.append(v["eth_src"] != v["eth_dst"])
        is_arp = v["eth_type"] == ETH_ARP
        is_ip = v["eth_type"] == ETH_IPV4
        arp = [_one_of(v["arp_op"], self.arp_ops), v["arp_sha"] == v["eth_src"]]
        ip = [_one_of(v["ip_proto"], self.ip_protos)]
        if self.src_is_sender:
            arp.append(v["arp_spa"] == sender.ip)
            ip.append(v["ip_src"] == sender.ip)
        if self.dst_is_known:
            arp.append(_one_of(v["arp_tpa"], self.dst_ips(sender, known)))
            arp.append(_one_of(v["arp_tha"], [0] + self.dst_macs(sender, known)))
            ip.append(_one_of(v["ip_dst"], self.dst_ips(sender, known)))
        out.append(z3.Implies(is_arp, z3.And(*arp)))
        out.append(z3.Implies(is_ip, z3.And(*ip)))
        return out

    def preferences(self, v: dict[str, z3.BitVecRef]) -> list[z3.BoolRef]:
        """Soft constraints for the fields a path leaves free, so representatives look like real
        traffic (an ARP request, an ICMP echo request, a TCP SYN to port 80) -- that matters to
        the model checker: an echo request gets answered, an echo reply does not."""
        return [v["arp_op"] == 1, v["arp_tha"] == 0, v["icmp_type"] == 8, v["icmp_code"] == 0,
                v["tcp_flags"] == TCP_SYN, v["tp_src"] == 49152, v["tp_dst"] == 80]

    def accepts(self, p: Packet, sender: HostLike, known: Sequence[HostLike]) -> bool:
        """The same rules as :meth:`constraints`, checked on a concrete packet."""
        if p.eth_type not in self.eth_types:
            return False
        if self.src_is_sender and p.eth_src != sender.mac:
            return False
        if self.dst_is_known and p.eth_dst not in self.dst_macs(sender, known):
            return False
        if not self.dst_is_known and p.eth_src == p.eth_dst:
            return False
        l3 = p.l3
        if p.eth_type == ETH_ARP:
            if type(l3) is not Arp or l3.op not in self.arp_ops or l3.sha != p.eth_src:
                return False
            if self.src_is_sender and l3.spa != sender.ip:
                return False
            if self.dst_is_known and (l3.tpa not in self.dst_ips(sender, known)
                                      or l3.tha not in [0] + self.dst_macs(sender, known)):
                return False
        if p.eth_type == ETH_IPV4:
            if type(l3) is not IPv4 or l3.proto not in self.ip_protos:
                return False
            if self.src_is_sender and l3.src != sender.ip:
                return False
            if self.dst_is_known and l3.dst not in self.dst_ips(sender, known):
                return False
        return True


def concrete_packet(values: dict[str, int]) -> Packet:
    """The real packet for a solver model (fields the model leaves free are its completion)."""
    et = values["eth_type"]
    src, dst = values["eth_src"], values["eth_dst"]
    if et == ETH_ARP:
        return Packet(src, dst, et, l3=Arp(values["arp_op"], values["arp_sha"], values["arp_spa"],
                                           values["arp_tha"], values["arp_tpa"]))
    if et == ETH_IPV4:
        proto = values["ip_proto"]
        ip = IPv4(values["ip_src"], values["ip_dst"], proto)
        l4: Any = None
        if proto == PROTO_TCP:
            l4 = TCP(values["tp_src"], values["tp_dst"], flags=values["tcp_flags"])
        elif proto == PROTO_UDP:
            l4 = UDP(values["tp_src"], values["tp_dst"])
        elif proto == PROTO_ICMP:
            l4 = ICMP(values["icmp_type"], values["icmp_code"])
        return Packet(src, dst, et, l3=ip, l4=l4)
    return Packet(src, dst, et)


class SymPacket(Packet):
    """A Packet whose header fields are symbolic (see the module docstring).

    ``l3``/``l4`` shadow the base class's slots with properties; the base
    slots are never set.
    """

    __slots__ = ("_sym", "_tr", "_l3", "_l4")
    _sym: dict[str, Any]
    _l3: Any
    _l4: Any

    # Hashing symbolic fields concretizes them (sym.py): every hash is recorded, none is kept.
    __hash__ = Packet.fields_hash

    @classmethod
    def make(cls, tr: Tracer, variables: dict[str, z3.BitVecRef], values: dict[str, int]) -> SymPacket:
        sym = {n: SymInt(values[n], variables[n], tr) for n in FIELDS}
        p = object.__new__(cls)
        set_ = object.__setattr__
        set_(p, "_sym", sym)
        set_(p, "_tr", tr)
        set_(p, "_l3", _UNSET)
        set_(p, "_l4", _UNSET)
        set_(p, "eth_src", sym["eth_src"])
        set_(p, "eth_dst", sym["eth_dst"])
        set_(p, "eth_type", sym["eth_type"])
        set_(p, "vlan", None)
        set_(p, "payload", b"")
        set_(p, "trailer", b"")
        return p

    @property
    def l3(self) -> Any:
        v = self._l3
        if v is _UNSET:
            s = self._sym
            et = s["eth_type"]
            if et == ETH_ARP:
                v = Arp(s["arp_op"], s["arp_sha"], s["arp_spa"], s["arp_tha"], s["arp_tpa"])
            elif et == ETH_IPV4:
                v = IPv4(s["ip_src"], s["ip_dst"], s["ip_proto"])
            else:
                v = None
            object.__setattr__(self, "_l3", v)
        return v

    @property
    def l4(self) -> Any:
        v = self._l4
        if v is _UNSET:
            s = self._sym
            v = None
            if type(self.l3) is IPv4:
                proto = s["ip_proto"]
                if proto == PROTO_TCP:
                    v = TCP(s["tp_src"], s["tp_dst"], flags=s["tcp_flags"])
                elif proto == PROTO_UDP:
                    v = UDP(s["tp_src"], s["tp_dst"])
                elif proto == PROTO_ICMP:
                    v = ICMP(s["icmp_type"], s["icmp_code"])
            object.__setattr__(self, "_l4", v)
        return v

    def __repr__(self) -> str:
        return f"SymPacket({', '.join(f'{k}={v.value:#x}' for k, v in self._sym.items())})"


_UNSET = object()
