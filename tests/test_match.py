"""OpenFlow 1.0 match semantics: normalization, prefixes, covers/overlaps, os-ken round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from of10_fields import pkt
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as ofp_parser
from sampled import BOOLEANS, sample

from netsleuth.errors import NetsleuthError
from netsleuth.model.addr import ip_to_int
from netsleuth.model.match import FIELDS, NW_DST, NW_SRC, Match, MatchError

IP = ip_to_int


# ---------------------------------------------------------------- normalization
def test_garbage_in_wildcarded_fields_is_ignored() -> None:
    a = Match(ofp.OFPFW_ALL & ~ofp.OFPFW_IN_PORT, in_port=3)
    b = Match(ofp.OFPFW_ALL & ~ofp.OFPFW_IN_PORT, in_port=3, dl_src=0x1234, tp_dst=80, nw_src=IP("1.2.3.4"))
    assert a == b and hash(a) == hash(b)
    assert b.dl_src == 0 and b.tp_dst == 0 and b.nw_src == 0


def test_host_bits_under_prefix_are_masked() -> None:
    a = Match.build(dl_type=0x800, nw_src="10.1.2.3/8")
    assert a.nw_src == IP("10.0.0.0")
    assert a == Match.build(dl_type=0x800, nw_src="10.0.0.0/8")
    assert a.nw_src_prefixlen == 8 and a.nw_dst_prefixlen == 0


@pytest.mark.parametrize("count", [32, 33, 40, 63])
def test_prefix_wildcard_counts_of_32_or_more_mean_any(count: int) -> None:
    wc = (ofp.OFPFW_ALL & ~ofp.OFPFW_NW_SRC_MASK) | (count << ofp.OFPFW_NW_SRC_SHIFT)
    m = Match(wc, nw_src=IP("10.0.0.1"))
    assert m == Match.catch_all()
    assert (m.wildcards & ofp.OFPFW_NW_SRC_MASK) >> ofp.OFPFW_NW_SRC_SHIFT == 32
    assert m.nw_src == 0


def test_reserved_wildcard_bits_are_dropped() -> None:
    assert Match(ofp.OFPFW_ALL | (1 << 25)) == Match.catch_all()


def test_nw_tos_keeps_only_dscp_bits() -> None:
    m = Match.build(dl_type=0x800, nw_tos=0x2F)
    assert m.nw_tos == 0x2C
    assert m.matches(pkt(dl_type=0x800, nw_tos=0x2C)) and not m.matches(pkt(dl_type=0x800, nw_tos=0x28))


def test_out_of_range_values_raise_typed_errors_with_fix() -> None:
    with pytest.raises(MatchError) as err:
        Match(0, in_port=0x10000)
    assert isinstance(err.value, NetsleuthError) and err.value.fix
    with pytest.raises(MatchError):
        Match.build(color="red")
    with pytest.raises(MatchError):
        Match.build(nw_dst="10.0.0.0/33")
    with pytest.raises(MatchError):
        Match.build(nw_dst="ten.0.0.1")


# ---------------------------------------------------------------- build and matches
def test_build_is_exact_on_given_fields_only() -> None:
    m = Match.build(in_port=1, dl_type=0x0800, dl_src="00:00:00:00:00:0a")
    assert m.matches(pkt(in_port=1, dl_type=0x0800, dl_src=10, tp_dst=99, nw_src=5))
    assert not m.matches(pkt(in_port=2, dl_type=0x0800, dl_src=10))
    assert not m.matches(pkt(in_port=1, dl_type=0x0806, dl_src=10))
    assert not m.is_exact() and Match.exact(pkt(in_port=1)).is_exact()


@pytest.mark.parametrize("spec", ["10.0.0.0/8", (IP("10.0.0.0"), 8), (IP("10.9.9.9"), 8)])
def test_prefix_forms_are_equivalent(spec: object) -> None:
    m = Match.build(dl_type=0x800, nw_dst=spec)
    assert m == Match.build(dl_type=0x800, nw_dst="10.0.0.0/8")
    assert m.matches(pkt(dl_type=0x800, nw_dst=IP("10.255.1.1")))
    assert not m.matches(pkt(dl_type=0x800, nw_dst=IP("11.0.0.0")))
    assert not m.matches(pkt(dl_type=0x800, nw_dst=IP("9.255.255.255")))


def test_prefix_edges() -> None:
    ip = {"dl_type": 0x800}
    assert Match.build(**ip, nw_src="1.2.3.4/0").matches(pkt(**ip, nw_src=IP("200.1.1.1")))
    host = Match.build(**ip, nw_src="1.2.3.4")
    assert host.matches(pkt(**ip, nw_src=IP("1.2.3.4"))) and not host.matches(pkt(**ip, nw_src=IP("1.2.3.5")))
    m31 = Match.build(**ip, nw_src="1.2.3.4/31")
    assert m31.matches(pkt(**ip, nw_src=IP("1.2.3.5"))) and not m31.matches(pkt(**ip, nw_src=IP("1.2.3.6")))


def test_catch_all_matches_anything() -> None:
    assert Match.catch_all().matches(pkt(in_port=7, dl_src=(1 << 48) - 1, nw_dst=0xFFFFFFFF))
    assert str(Match.catch_all()) == ""


# ---------------------------------------------------------------- covers / overlaps
def test_covers_with_prefixes() -> None:
    p8, p16 = Match.build(dl_type=0x800, nw_src="10.0.0.0/8"), Match.build(dl_type=0x800, nw_src="10.1.0.0/16")
    other16 = Match.build(dl_type=0x800, nw_src="11.1.0.0/16")
    assert p8.covers(p16) and not p16.covers(p8)
    assert not p8.covers(other16)
    assert Match.catch_all().covers(p8) and not p8.covers(Match.catch_all())
    assert p8.covers(p8)


def test_covers_requires_the_other_to_fix_the_field() -> None:
    a = Match.build(in_port=1)
    assert not a.covers(Match.build(dl_type=0x800))
    assert a.covers(Match.build(in_port=1, dl_type=0x800))
    assert not a.covers(Match.build(in_port=2, dl_type=0x800))


def test_an_exact_zero_value_does_not_cover_a_wildcard() -> None:
    # A wildcarded field is stored as 0; covering must look at the masks, not only the values.
    ip = {"dl_type": 0x800}
    assert not Match.build(**ip, nw_tos=0).covers(Match.build(**ip))
    assert not Match.build(**ip, nw_src="0.0.0.0/8").covers(Match.build(**ip, nw_src="0.0.0.0/4"))
    assert not Match.build(dl_vlan_pcp=0, in_port=1).covers(Match.build(in_port=1))
    assert Match.build(**ip, nw_src="0.0.0.0/4").covers(Match.build(**ip, nw_src="0.0.0.0/8"))


def test_overlaps_examples() -> None:
    assert Match.build(in_port=1).overlaps(Match.build(dl_type=0x800))
    assert not Match.build(in_port=1).overlaps(Match.build(in_port=2))
    ip, tcp = {"dl_type": 0x800}, {"dl_type": 0x800, "nw_proto": 6}
    assert Match.build(**ip, nw_dst="10.0.0.0/8").overlaps(Match.build(**ip, nw_dst="10.2.0.0/16"))
    assert not Match.build(**ip, nw_dst="10.0.0.0/16").overlaps(Match.build(**ip, nw_dst="10.1.0.0/16"))
    assert not Match.build(**tcp, nw_dst="10.0.0.0/8", tp_dst=80).overlaps(
        Match.build(**tcp, nw_dst="10.1.0.0/16", tp_dst=22))


# Random matches over small domains, with garbage in wildcarded fields.
FLAG_FIELDS = [(n, getattr(ofp, "OFPFW_" + n.upper())) for n in FIELDS if n not in ("nw_src", "nw_dst")]
DOMAINS = {"in_port": [1, 2], "dl_src": [1, 2], "dl_dst": [1, 0xFFFFFFFFFFFF], "dl_vlan": [5, 0xFFFF],
           "dl_vlan_pcp": [0, 3], "dl_type": [0x800, 0x806], "nw_tos": [0, 4, 5], "nw_proto": [1, 6],
           "tp_src": [80, 443], "tp_dst": [80, 443]}
ADDRS = [IP("10.0.0.1"), IP("10.0.1.1"), IP("10.128.0.0"), IP("11.0.0.1"), 0]


@st.composite
def matches(draw: st.DrawFn) -> Match:
    wc = 0
    kw: dict[str, int] = {}
    for name, bit in FLAG_FIELDS:
        if draw(BOOLEANS):
            wc |= bit
        kw[name] = draw(sample(DOMAINS[name]))
    for name, shift in (("nw_src", ofp.OFPFW_NW_SRC_SHIFT), ("nw_dst", ofp.OFPFW_NW_DST_SHIFT)):
        wc |= draw(sample([0, 1, 8, 16, 23, 24, 32, 50])) << shift
        kw[name] = draw(sample(ADDRS))
    return Match(wc, **kw)


@st.composite
def packets(draw: st.DrawFn) -> tuple[int, ...]:
    kw = {n: draw(sample(DOMAINS[n])) for n, _ in FLAG_FIELDS}
    kw["nw_tos"] &= 0xFC
    kw["nw_src"] = draw(sample(ADDRS))
    kw["nw_dst"] = draw(sample(ADDRS))
    return pkt(**kw)


def ref_matches(m: Match, f: tuple[int, ...]) -> bool:
    """Straight from the spec: wildcard bits and prefix counts, no masks tables."""
    for i, (name, bit) in enumerate((n, getattr(ofp, "OFPFW_" + n.upper(), None)) for n in FIELDS):
        if name in ("nw_src", "nw_dst"):
            shift = ofp.OFPFW_NW_SRC_SHIFT if name == "nw_src" else ofp.OFPFW_NW_DST_SHIFT
            n = min((m.wildcards >> shift) & 0x3F, 32)
            if n < 32 and (f[i] >> n) != (getattr(m, name) >> n):
                return False
        elif not m.wildcards & bit:
            value = f[i] & 0xFC if name == "nw_tos" else f[i]
            if value != getattr(m, name):
                return False
    return True


@settings(max_examples=200, deadline=None)
@given(matches(), packets())
def test_matches_agrees_with_spec_reference(m: Match, f: tuple[int, ...]) -> None:
    assert m.matches(f) == ref_matches(m, f)


@settings(max_examples=200, deadline=None)
@given(matches(), matches())
def test_overlaps_is_exact(a: Match, b: Match) -> None:
    # Witness: each field takes the value of whichever match constrains more bits.
    witness = tuple(va if ma & mb == mb else vb
                    for ma, va, mb, vb in zip(a.masks, a.values, b.masks, b.values, strict=True))
    both = a.matches(witness) and b.matches(witness)
    assert a.overlaps(b) == both == b.overlaps(a)


@settings(max_examples=200, deadline=None)
@given(matches(), matches(), packets())
def test_covers_is_exact(a: Match, b: Match, f: tuple[int, ...]) -> None:
    if a.covers(b):
        assert not b.matches(f) or a.matches(f)
        return
    # Not covering must have a counterexample: a packet b matches and a does not.
    p = list(b.values)
    if a.matches(tuple(p)):
        for i, (ma, mb) in enumerate(zip(a.masks, b.masks, strict=True)):
            extra = ma & ~mb
            if extra:
                p[i] ^= extra & -extra
                break
    assert b.matches(tuple(p)) and not a.matches(tuple(p))


@settings(max_examples=200, deadline=None)
@given(matches(), matches())
def test_sort_key_is_a_total_order_consistent_with_equality(a: Match, b: Match) -> None:
    assert (a.sort_key() == b.sort_key()) == (a == b)


# ---------------------------------------------------------------- conversions
@settings(max_examples=100, deadline=None)
@given(matches())
def test_ofp_round_trip_through_wire_bytes(m: Match) -> None:
    buf = bytearray(ofp.OFP_MATCH_SIZE)
    m.to_ofp().serialize(buf, 0)
    parsed = ofp_parser.OFPMatch.parse(bytes(buf), 0)
    assert isinstance(parsed.dl_src, bytes) and isinstance(parsed.nw_src, int)
    assert Match.from_ofp(parsed) == m
    assert Match.from_json(m.to_json()) == m


def test_from_ofp_reads_controller_style_ofpmatch() -> None:
    om = ofp_parser.OFPMatch(in_port=1, dl_src="aa:bb:cc:dd:ee:ff", dl_type=0x0800,
                             nw_src="10.1.2.3", nw_src_mask=16, tp_dst=80)
    assert Match.from_ofp(om) == Match.build(in_port=1, dl_src=0xAABBCCDDEEFF, dl_type=0x0800,
                                             nw_src="10.1.0.0/16", tp_dst=80)
    assert Match.from_ofp(ofp_parser.OFPMatch()) == Match.catch_all()


def test_str_is_ovs_ofctl_syntax() -> None:
    m = Match.build(in_port=1, dl_dst="0a:00:00:00:00:01", dl_vlan=0xFFFF, dl_type=0x0800,
                    nw_proto=6, nw_dst="10.0.0.0/8", tp_dst=80)
    assert str(m) == ("in_port=1,dl_dst=0a:00:00:00:00:01,dl_vlan=0xffff,dl_type=0x0800,nw_proto=6,"
                      "nw_dst=10.0.0.0/8,tp_dst=80")


def test_masks_index_by_field() -> None:
    m = Match.build(dl_type=0x800, nw_src="10.0.0.0/8", nw_dst="1.2.3.4")
    assert m.masks[NW_SRC] == 0xFF000000 and m.masks[NW_DST] == 0xFFFFFFFF


# ---------------------------------------------------------------- prerequisites (Open vSwitch's rules)
def _pox_style(**fields: int) -> Match:
    """What POX sends for a layer-2 rule: dl_type wildcarded, the network and transport fields zero
    but not wildcarded (OpenFlow 1.0.1's "ignored fields")."""
    wc = ofp.OFPFW_ALL & ~(ofp.OFPFW_NW_TOS | ofp.OFPFW_NW_PROTO | ofp.OFPFW_NW_SRC_MASK | ofp.OFPFW_NW_DST_MASK
                           | ofp.OFPFW_TP_SRC | ofp.OFPFW_TP_DST)
    for name in fields:
        wc &= ~getattr(ofp, "OFPFW_" + name.upper())
    return Match(wc, **fields)


def test_network_and_transport_fields_without_dl_type_are_ignored() -> None:
    m = _pox_style(dl_dst=2)
    assert m == Match.build(dl_dst=2)
    tcp = pkt(dl_dst=2, dl_type=0x800, nw_proto=6, nw_src=IP("10.0.0.1"), nw_dst=IP("10.0.0.2"),
              tp_src=1234, tp_dst=80)
    assert m.matches(tcp) and m.matches(pkt(dl_dst=2, dl_type=0x806, nw_proto=1))
    assert not m.matches(pkt(dl_dst=3))


def test_transport_fields_need_a_transport_protocol() -> None:
    m = Match.build(dl_type=0x800, nw_proto=47, tp_dst=80)  # GRE has no ports
    assert m == Match.build(dl_type=0x800, nw_proto=47)
    assert Match.build(dl_type=0x800, tp_dst=80) == Match.build(dl_type=0x800)  # nw_proto wildcarded
    for proto in (1, 6, 17, 132):
        kept = Match.build(dl_type=0x800, nw_proto=proto, tp_dst=80)
        assert kept.masks[FIELDS.index("tp_dst")] == 0xFFFF
        assert not kept.matches(pkt(dl_type=0x800, nw_proto=proto, tp_dst=81))


def test_arp_keeps_addresses_and_opcode_but_not_tos_or_ports() -> None:
    m = Match.build(dl_type=0x806, nw_proto=1, nw_dst="10.0.0.2", nw_tos=8, tp_src=5)
    assert m == Match.build(dl_type=0x806, nw_proto=1, nw_dst="10.0.0.2")
    assert m.matches(pkt(dl_type=0x806, nw_proto=1, nw_dst=IP("10.0.0.2")))
    assert not m.matches(pkt(dl_type=0x806, nw_proto=2, nw_dst=IP("10.0.0.2")))


def test_an_exact_match_stays_exact_with_its_ignored_fields_zeroed() -> None:
    # OpenFlow 1.0 ranks a match with no wildcard bit above all others, by its wire form.
    arp = pkt(in_port=1, dl_type=0x806, nw_proto=1, nw_src=IP("10.0.0.1"), nw_dst=IP("10.0.0.2"))
    garbage = list(arp)
    garbage[FIELDS.index("tp_src")] = 7
    garbage[FIELDS.index("nw_tos")] = 8
    m = Match(0, *garbage)
    assert m.is_exact() and m == Match.exact(arp)
    assert m.matches(arp)
    assert Match.from_ofp(m.to_ofp()) == m and Match.from_json(m.to_json()) == m


@settings(max_examples=200, deadline=None)
@given(matches())
def test_normalization_is_idempotent(m: Match) -> None:
    again = Match(m.wildcards, *m.values)
    assert again == m and again.masks == m.masks
