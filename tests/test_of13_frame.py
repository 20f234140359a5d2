"""The OpenFlow 1.3 frame model: exact bytes both ways, lossless JSON, the 1.0 packets untouched.

tshark, an independent dissector, checks the bytes the model writes for the
headers 1.0 never had (802.1ad tags, MPLS stacks, IPv6 with extension
headers, ICMPv6 Neighbor Discovery, SCTP), checksums included.
"""

from __future__ import annotations

import ipaddress
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netsleuth.model.of13.fields import oxm_fields
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.headers import SCTP, ICMPv6, IPv6, MplsLabel, VlanTag, crc32c, walk_exthdrs
from netsleuth.model.packet import (
    TCP,
    UDP,
    IPv4,
    Packet,
    PacketError,
    Vlan,
    arp_request,
    icmp_echo,
    lldp_frame,
    tcp_syn,
    udp_packet,
)

A6 = lambda s: int(ipaddress.IPv6Address(s))  # noqa: E731
TSHARK = shutil.which("tshark")


def ns_frame() -> Frame:
    return Frame(1, 0x3333FF000002, 0x86DD, (), (),
                 IPv6(A6("fe80::1"), A6("ff02::1:ff00:2"), 58, 255, 0xB8, 0x12345),
                 ICMPv6(135, 0, 0, A6("fe80::2"), ((1, bytes.fromhex("000000000001")),)))


def sample_frames() -> list[Frame]:
    inner = Frame(0, 0, 0x0800, (), (), IPv4(0x0A000001, 0x0A000002, 17, ttl=40), UDP(5, 53), b"dns")
    hop = bytes([6, 0]) + bytes(6)  # hop-by-hop header (8 bytes) carrying TCP
    return [
        Frame(1, 2, 0x0800, (VlanTag(5, 3, 0, 0x88A8), VlanTag(7, 1)), (), IPv4(0x0A000001, 0x0A000002, 17),
              UDP(1000, 2000), b"qinq"),
        Frame(1, 2, 0x8847, (VlanTag(9),), (MplsLabel(100, 2, 0, 30), MplsLabel(200, 0, 1, 31)),
              payload=inner.l3_bytes()),
        ns_frame(),
        Frame(1, 2, 0x86DD, (), (), IPv6(A6("2001:db8::1"), A6("2001:db8::2"), 0, 64, exthdrs=hop),
              TCP(80, 443, flags=0x12), b"hello"),
        Frame(1, 2, 0x0800, (), (), IPv4(0x0A000001, 0x0A000002, 132, tos=0x2E), SCTP(5000, 6000, 0xDEADBEEF),
              b"x" * 16),
        Frame(1, 2, 0x86DD, (), (), IPv6(A6("fe80::1"), A6("fe80::2"), 17), UDP(53, 53), b"v6 udp"),
    ]


# --------------------------------------------------------------------- bytes
@pytest.mark.parametrize("frame", sample_frames(), ids=lambda f: f.summary())
def test_frames_round_trip_through_bytes_and_json(frame: Frame) -> None:
    data = frame.to_bytes()
    parsed = Frame.from_bytes(data)
    assert parsed.to_bytes() == data
    assert Frame.from_json(parsed.to_json()) == parsed
    assert Frame.from_json(frame.to_json()).to_bytes() == data


def test_every_1_0_packet_keeps_its_bytes_through_a_frame() -> None:
    packets = [arp_request("00:00:00:00:00:01", "10.0.0.1", "10.0.0.2"),
               icmp_echo(1, 2, "10.0.0.1", "10.0.0.2", 7, 9, payload=b"ping"),
               tcp_syn(1, 2, "10.0.0.1", "10.0.0.2", 1234, 80), udp_packet(1, 2, "10.0.0.1", "10.0.0.2", 5, 6, b"u"),
               lldp_frame(1, "chassis", 3),
               Packet(1, 2, 0x0800, Vlan(10, 5), IPv4(1, 2, 6, ttl=3), TCP(1, 2), b"", b"\0" * 6)]
    for p in packets:
        f = Frame.from_packet(p)
        assert f.to_bytes() == p.to_bytes()
        assert f.to_packet().to_bytes() == p.to_bytes()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_any_bytes_parse_and_write_back_exactly(data: bytes) -> None:
    assert Frame.from_bytes(data).to_bytes() == data


def test_ipv6_with_next_header_1_keeps_what_follows_as_payload() -> None:
    """Protocol 1 is ICMP only under IPv4; under IPv6 the bytes stay payload (OVS parses it so too)."""
    v6 = next(f for f in sample_frames() if isinstance(f.l3, IPv6) and isinstance(f.l4, ICMPv6))
    raw = bytearray(v6.to_bytes())
    raw[14 + 6] = 1
    parsed = Frame.from_bytes(bytes(raw))
    assert parsed.l4 is None and parsed.to_bytes() == bytes(raw)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sample_frames()), st.data())
def test_damaged_frames_write_back_exactly(frame: Frame, data: st.DataObject) -> None:
    raw = bytearray(frame.to_bytes())
    cut = data.draw(st.integers(0, len(raw)))
    pos = data.draw(st.integers(0, len(raw) - 1))
    raw[pos] = data.draw(st.integers(0, 255))
    for blob in (bytes(raw), bytes(raw[:cut])):
        parsed = Frame.from_bytes(blob)
        assert parsed.to_bytes() == blob
        assert Frame.from_json(parsed.to_json()).to_bytes() == blob


def test_inconsistent_records_are_refused_with_a_fix() -> None:
    with pytest.raises(PacketError) as exc:
        Frame(1, 2, 0x0800, (), (), IPv6(1, 2, 6))
    assert exc.value.fix
    with pytest.raises(PacketError):
        Frame(1, 2, 0x0800, (), (MplsLabel(1),))
    with pytest.raises(PacketError):
        Frame(1, 2, 0x86DD, (), (), IPv6(1, 2, 17), TCP(1, 2))
    with pytest.raises(PacketError):
        Frame(1, 2, 0x0800, (VlanTag(5000),)).to_bytes()


def test_sctp_checksum_is_crc32c() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    f = sample_frames()[4]
    seg = f.l3_bytes()[20:]
    stored = seg[8:12]
    assert stored == crc32c(seg[:8] + b"\0\0\0\0" + seg[12:]).to_bytes(4, "little")


def test_ipv6_extension_header_walk() -> None:
    hop = bytes([43, 0]) + bytes(6)
    routing = bytes([44, 0]) + bytes(6)
    frag_later = bytes([6, 0]) + struct.pack("!H", 8 << 3) + bytes(4)
    proto, bits, first = walk_exthdrs(0, hop + routing + frag_later)
    assert (proto, first) == (6, False)
    assert bits == (64 | 32 | 16)  # OFPIEH_HOP | OFPIEH_ROUTER | OFPIEH_FRAG
    frame = Frame.from_bytes(Frame(1, 2, 0x86DD, (), (), IPv6(1, 2, 0, exthdrs=hop + routing + frag_later),
                                   payload=b"12345678abcdefgh").to_bytes())
    assert frame.l4 is None  # a later fragment has no transport header
    assert oxm_fields(frame, 1)["ipv6_exthdr"] == bits
    assert walk_exthdrs(59, b"")[1] == 1  # OFPIEH_NONEXT


def test_oxm_fields_of_each_header() -> None:
    f = oxm_fields(sample_frames()[0], 3, metadata=9)
    assert (f["in_port"], f["metadata"], f["vlan_vid"], f["vlan_pcp"], f["eth_type"]) == (3, 9, 0x1005, 3, 0x0800)
    assert (f["udp_src"], f["udp_dst"], f["ip_proto"]) == (1000, 2000, 17)
    m = oxm_fields(sample_frames()[1], 1)
    assert (m["mpls_label"], m["mpls_tc"], m["mpls_bos"], m["eth_type"]) == (100, 2, 0, 0x8847)
    assert "ipv4_src" not in m  # nothing past a label is parsed
    n = oxm_fields(ns_frame(), 1)
    assert (n["ip_dscp"], n["ip_ecn"], n["ipv6_flabel"], n["icmpv6_type"]) == (0x2E, 0, 0x12345, 135)
    assert (n["ipv6_nd_target"], n["ipv6_nd_sll"], n["ipv6_nd_tll"]) == (A6("fe80::2"), 1, 0)
    assert oxm_fields(Frame(1, 2, 0x0800), 1)["vlan_vid"] == 0  # OFPVID_NONE
    arp = oxm_fields(Frame.from_packet(arp_request(1, "10.0.0.1", "10.0.0.2")), 1)
    assert (arp["arp_op"], arp["arp_spa"], arp["arp_tpa"], arp["arp_sha"]) == (1, 0x0A000001, 0x0A000002, 1)
    s = oxm_fields(sample_frames()[4], 1)
    assert (s["sctp_src"], s["sctp_dst"], s["ip_dscp"], s["ip_ecn"]) == (5000, 6000, 0x0B, 2)


# --------------------------------------------------------------------- tshark
def _pcap(frames: list[Frame], path: Path) -> None:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, f in enumerate(frames):
        data = f.to_bytes()
        out += struct.pack("<IIII", i, 0, len(data), len(data)) + data
    path.write_bytes(out)


@pytest.mark.skipif(TSHARK is None, reason="tshark is installed by `make` (Debian package tshark)")
@pytest.mark.real
def test_tshark_reads_the_new_headers_and_checksums(tmp_path: Path) -> None:
    path = tmp_path / "of13.pcap"
    _pcap(sample_frames(), path)
    fields = ["ieee8021ad.id", "vlan.id", "mpls.label", "mpls.bottom", "ipv6.src", "ipv6.flow",
              "icmpv6.nd.ns.target_address", "icmpv6.opt.linkaddr", "icmpv6.checksum.status", "sctp.srcport",
              "sctp.checksum.status", "tcp.checksum.status", "udp.checksum.status", "ip.checksum.status",
              "ipv6.hopopts.nxt", "eth.type"]
    cmd = [str(TSHARK), "-r", str(path), "-o", "sctp.checksum:CRC-32C", "-o", "tcp.check_checksum:TRUE",
           "-o", "udp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE", "-T", "fields",
           "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"]
    for name in fields:
        cmd += ["-e", name]
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in
            subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()]
    qinq, mpls, ns, hop, sctp, udp6 = rows
    assert qinq["ieee8021ad.id"] == "5" and qinq["vlan.id"] == "7" and qinq["eth.type"] == "0x88a8"
    assert qinq["udp.checksum.status"] == "1"
    assert qinq["ip.checksum.status"] == "1"  # Wireshark's checksum status 1: good
    assert mpls["mpls.label"] == "100,200" and mpls["mpls.bottom"] == "0,1"
    assert mpls["udp.checksum.status"] == "1"  # the datagram under the labels is intact
    assert ns["ipv6.src"] == "fe80::1" and ns["icmpv6.nd.ns.target_address"] == "fe80::2"
    assert ns["icmpv6.opt.linkaddr"] == "00:00:00:00:00:01" and ns["icmpv6.checksum.status"] == "1"
    assert int(ns["ipv6.flow"], 16) == 0x12345
    assert hop["ipv6.hopopts.nxt"] == "6" and hop["tcp.checksum.status"] == "1"
    assert sctp["sctp.srcport"] == "5000" and sctp["sctp.checksum.status"] == "1"
    assert udp6["udp.checksum.status"] == "1"
