"""OXM matches: validation errors, canonical form, os-ken and JSON forms, covers/overlaps vs brute force."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.fieldspec import SPECS
from netsleuth.model.of13.oxm import OxmMatch


def code_of(fn: object) -> str:
    with pytest.raises(OFError) as exc:
        fn()  # type: ignore[operator]
    assert exc.value.fix
    return exc.value.name


def test_every_oxm_basic_field_of_1_3_5_is_known() -> None:
    names = {s.name for s in SPECS}
    assert len(SPECS) == 40
    for n in dir(ofp):
        if n.startswith("OFPXMT_OFB_"):
            assert n[len("OFPXMT_OFB_"):].lower() in names


@pytest.mark.parametrize("fields, error", [
    ({"tcp_dst": 80}, "OFPBMC_BAD_PREREQ"),
    ({"eth_type": 0x0800, "tcp_dst": 80}, "OFPBMC_BAD_PREREQ"),
    ({"eth_type": 0x86DD, "ip_proto": 6, "tcp_dst": 80}, None),
    ({"eth_type": 0x0806, "ip_proto": 6}, "OFPBMC_BAD_PREREQ"),
    ({"eth_type": 0x86DD, "ipv4_src": 1}, "OFPBMC_BAD_PREREQ"),
    ({"eth_type": 0x0800, "ip_proto": 1, "icmpv4_type": 8}, None),
    ({"eth_type": 0x86DD, "ip_proto": 1, "icmpv4_type": 8}, "OFPBMC_BAD_PREREQ"),
    ({"eth_type": 0x86DD, "ip_proto": 58, "icmpv6_type": 136, "ipv6_nd_tll": 5}, None),
    ({"eth_type": 0x86DD, "ip_proto": 58, "icmpv6_type": 135, "ipv6_nd_tll": 5}, "OFPBMC_BAD_PREREQ"),
    ({"eth_type": 0x8848, "mpls_bos": 1}, None),
    ({"eth_type": 0x88E7, "pbb_isid": (0x100, 0xF00)}, None),
    ({"in_phy_port": 3}, "OFPBMC_BAD_PREREQ"),
    ({"in_port": 1, "in_phy_port": 3}, None),
    ({"vlan_pcp": 1}, "OFPBMC_BAD_PREREQ"),
    ({"vlan_vid": (0x1000, 0x1000), "vlan_pcp": 1}, None),
    ({"vlan_vid": 0, "vlan_pcp": 1}, "OFPBMC_BAD_PREREQ"),
    ({"eth_type": (0x0800, 0xFF00)}, "OFPBMC_BAD_MASK"),
    ({"eth_type": 0x0800, "ip_proto": 6, "tcp_src": (1, 0xFF)}, "OFPBMC_BAD_MASK"),
    ({"eth_type": 0x0800, "ip_proto": 6, "tcp_src": (1, 0xFFFF)}, None),  # a full mask is exact
    ({"eth_dst": (0x0000000000FF, 0xFFFFFFFFFF00)}, "OFPBMC_BAD_WILDCARDS"),
    ({"eth_type": 0x0800, "ip_dscp": 64}, "OFPBMC_BAD_VALUE"),
    ({"vlan_vid": 0x2000}, "OFPBMC_BAD_VALUE"),
    ({"nonsense": 1}, "OFPBMC_BAD_FIELD"),
    ({"metadata": (5, 0xF), "tunnel_id": (1, 1)}, None),
])
def test_validation(fields: dict[str, object], error: str | None) -> None:
    if error is None:
        OxmMatch.build(**fields)
    else:
        assert code_of(lambda: OxmMatch.build(**fields)) == error


def test_duplicate_field_and_wire_order() -> None:
    assert code_of(lambda: OxmMatch.from_entries([("in_port", 1, None), ("in_port", 2, None)])) == "OFPBMC_DUP_FIELD"
    # The prerequisite may come after the field on the wire.
    late = OxmMatch.from_entries([("tcp_dst", 80, None), ("ip_proto", 6, None), ("eth_type", 0x800, None)])
    assert late == OxmMatch.build(eth_type=0x800, ip_proto=6, tcp_dst=80)


def test_canonical_form() -> None:
    a = OxmMatch.build(eth_type=0x800, ipv4_dst="10.1.2.3/8", in_port=3)
    b = OxmMatch.build(in_port=3, ipv4_dst=(0x0A000000, 0xFF000000), eth_type=0x800)
    assert a == b and hash(a) == hash(b) and a.sort_key() == b.sort_key()
    assert OxmMatch.build(metadata=(0, 0)) == OxmMatch()  # an all-zero mask matches anything
    assert OxmMatch.build(eth_dst=(5, (1 << 48) - 1)) == OxmMatch.build(eth_dst=5)
    assert str(a) == "in_port=3,eth_type=0x800,ip_dst=10.0.0.0/255.0.0.0"
    assert OxmMatch.from_json(a.to_json()) == a


def test_os_ken_round_trip_incl_parsed_bytes() -> None:
    m = OxmMatch.build(in_port=2, eth_src=("02:00:00:00:00:00", "ff:00:00:00:00:00"), vlan_vid=(0x1000, 0x1000),
                       eth_type=0x86DD, ipv6_dst="2001:db8::/32", ip_proto=58, icmpv6_type=135,
                       ipv6_nd_target="fe80::1", ipv6_flabel=(0x5, 0xF), metadata=(0x10, 0xFF))
    assert OxmMatch.from_ofp(m.to_ofp()) == m
    buf = bytearray()
    m.to_ofp().serialize(buf, 0)
    assert OxmMatch.from_ofp(parser.OFPMatch.parser(bytes(buf), 0)) == m


def test_matches_reads_absent_fields_as_zero() -> None:
    untagged = OxmMatch.build(vlan_vid=0)
    tagged = OxmMatch.build(vlan_vid=(0x1000, 0x1000))
    assert untagged.matches({"in_port": 1}) and not tagged.matches({"in_port": 1})
    assert tagged.matches({"vlan_vid": 0x1005}) and not untagged.matches({"vlan_vid": 0x1005})
    assert OxmMatch.build(vlan_vid=0x1005).matches({"vlan_vid": 0x1005})


# ---------------------------------------------------------------- covers/overlaps
SMALL = ("metadata", "tunnel_id", "in_port")


@st.composite
def small_match(draw: st.DrawFn) -> OxmMatch:
    entries = []
    for name in SMALL:
        if draw(st.booleans()):
            mask = draw(st.integers(0, 7)) if name != "in_port" else None
            value = draw(st.integers(0, 7)) & (7 if mask is None else mask)
            entries.append((name, value, mask))
    return OxmMatch.from_entries(entries)


UNIVERSE = [dict(zip(SMALL, v)) for v in itertools.product(range(8), range(8), range(8))]


@settings(max_examples=300, deadline=None)
@given(small_match(), small_match())
def test_covers_and_overlaps_agree_with_brute_force(a: OxmMatch, b: OxmMatch) -> None:
    in_a = {i for i, pkt in enumerate(UNIVERSE) if a.matches(pkt)}
    in_b = {i for i, pkt in enumerate(UNIVERSE) if b.matches(pkt)}
    # Within the universe the high bits are 0, so an entry with a high mask bit set to 1 matches nothing there;
    # the generated values stay in 0..7, so every match is non-empty in the universe.
    assert a.covers(b) == (in_b <= in_a)
    assert a.overlaps(b) == bool(in_a & in_b)
    assert a.overlaps(b) == b.overlaps(a)


@settings(max_examples=200, deadline=None)
@given(small_match(), small_match())
def test_sort_key_is_a_total_order_consistent_with_equality(a: OxmMatch, b: OxmMatch) -> None:
    assert (a.sort_key() == b.sort_key()) == (a == b)
