"""OpenFlow 1.3 OXM matches as validated, canonical, hashable values.

A match is a set of (field, value, mask) entries.  It is validated when it
is built, with the errors the spec and Open vSwitch prescribe, in the order
OVS checks them:

* unknown field -> OFPBMC_BAD_FIELD; a field twice -> OFPBMC_DUP_FIELD;
* a mask on a field the spec does not let be masked -> OFPBMC_BAD_MASK;
* a value or mask wider than the field -> OFPBMC_BAD_VALUE (a vlan_vid
  without OFPVID_PRESENT is accepted, as by Open vSwitch: it is a value
  no packet has, so it matches nothing);
* 1-bits in the value where the mask is 0 -> OFPBMC_BAD_WILDCARDS (OVS's
  wording: "1-bits in value for bits wildcarded by the mask");
* a field whose prerequisites the match does not also require ->
  OFPBMC_BAD_PREREQ (tcp_dst needs ip_proto=6 and eth_type 0x0800/0x86dd).

Then it is canonical: an all-ones mask is "exact" (mask = full width), an
all-zeros mask drops the entry (it matches anything), and entries are kept
in OXM field-number order, so ``==`` and ``hash`` are semantic equality and
``sort_key`` a total order.  Matching is bit arithmetic per entry, which
also makes ``covers``/``overlaps`` exact over the field bit-vectors.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.of13.errors import OFError, bad_match
from netsleuth.model.of13.fieldspec import BY_NAME, VID_PRESENT, FieldSpec, ovs_name

Entry = tuple[str, int, int]
"""(field name, value, mask); mask is the field's full width for an exact match."""


def parse_value(spec: FieldSpec, value: Any) -> int:
    """An int from an int or the field's text form (MAC, dotted quad, IPv6)."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            if spec.kind == "mac":
                return mac_to_int(value)
            if spec.kind == "ipv4":
                return ip_to_int(value)
            if spec.kind == "ipv6":
                return int(ipaddress.IPv6Address(value))
            return int(value, 0)
        except (ValueError, TypeError):
            pass
    raise bad_match(ofp.OFPBMC_BAD_VALUE, f"{spec.name}={value!r} is not a {spec.kind} value",
                    f"give {spec.name} as an int or its usual text form")


def render_value(spec: FieldSpec, value: int) -> str:
    """The field's text form: MACs, dotted quads, IPv6 addresses, hex or decimal."""
    if spec.kind == "mac":
        return int_to_mac(value)
    if spec.kind == "ipv4":
        return int_to_ip(value)
    if spec.kind == "ipv6":
        return str(ipaddress.IPv6Address(value))
    if spec.kind == "hex":
        return f"{value:#x}"
    return str(value)


def _spec(name: str) -> FieldSpec:
    spec = BY_NAME.get(name)
    if spec is None:
        raise bad_match(ofp.OFPBMC_BAD_FIELD, f"unknown OXM field {name!r}",
                        "use an OpenFlow 1.3 OXM basic field name (eth_dst, ipv4_src, tcp_dst, ...)")
    return spec


def check_value(spec: FieldSpec, value: int, mask: int | None) -> None:
    """OFPBMC_BAD_VALUE / BAD_MASK / BAD_WILDCARDS for one entry (see the module docstring)."""
    if mask is not None and not spec.maskable and mask != spec.full:
        raise bad_match(ofp.OFPBMC_BAD_MASK, f"{spec.name} cannot be masked",
                        f"match {spec.name} exactly or leave it out")
    if value < 0 or value > spec.full or (mask is not None and (mask < 0 or mask > spec.full)):
        raise bad_match(ofp.OFPBMC_BAD_VALUE, f"{spec.name}={value:#x} does not fit {spec.bits} bits",
                        f"keep {spec.name} within {spec.bits} bits")
    if mask is not None and value & ~mask:
        raise bad_match(ofp.OFPBMC_BAD_WILDCARDS, f"{spec.name}={value:#x}/{mask:#x} has value bits outside the mask",
                        "clear the value bits where the mask is 0")


@dataclass(frozen=True, slots=True)
class OxmMatch:
    """A validated, canonical OpenFlow 1.3 match (build with ``build``/``from_entries``)."""

    entries: tuple[Entry, ...] = ()
    _by_name: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False, hash=False, repr=False)

    # -- construction --------------------------------------------------------

    @classmethod
    def from_entries(cls, entries: Iterable[tuple[str, int, int | None]]) -> OxmMatch:
        """Validate (field, value, mask-or-None) entries in wire order; raise OFError per the spec."""
        seen: dict[str, tuple[int, int]] = {}
        for name, value, mask in entries:
            spec = _spec(name)
            if name in seen:
                raise bad_match(ofp.OFPBMC_DUP_FIELD, f"{name} appears twice in the match",
                                f"give {name} once")
            check_value(spec, value, mask)
            full_mask = spec.full if mask is None else mask
            seen[name] = (value, full_mask)
        for name in seen:
            _check_prereqs(BY_NAME[name], seen)
        kept = sorted(((n, v, m) for n, (v, m) in seen.items() if m), key=lambda e: BY_NAME[e[0]].code)
        return cls(tuple(kept), {n: (v, m) for n, v, m in kept})

    @classmethod
    def build(cls, **fields: Any) -> OxmMatch:
        """``OxmMatch.build(eth_type=0x800, ipv4_dst="10.0.0.0/8", vlan_vid=(0x1000, 0x1000))``.

        A value is an int, the field's text form, a (value, mask) pair, or
        for IPv4/IPv6 fields "address/prefixlen" (host bits are cleared, as
        a prefix means; a (value, mask) pair is taken as on the wire and
        host bits in it are OFPBMC_BAD_WILDCARDS).
        """
        entries: list[tuple[str, int, int | None]] = []
        for name, raw in fields.items():
            spec = _spec(name)
            mask: int | None = None
            prefix_text = False
            if isinstance(raw, tuple):
                raw, raw_mask = raw
                mask = parse_value(spec, raw_mask)
            elif isinstance(raw, str) and "/" in raw and spec.kind in ("ipv4", "ipv6"):
                raw, plen_text = raw.split("/", 1)
                plen = int(plen_text)
                mask = (spec.full << (spec.bits - plen)) & spec.full
                prefix_text = True
            value = parse_value(spec, raw)
            if prefix_text:
                value &= mask if mask is not None else spec.full  # a prefix names the network, host bits aside
            entries.append((name, value, mask))
        return cls.from_entries(entries)

    @classmethod
    def catch_all(cls) -> OxmMatch:
        return cls()

    def __post_init__(self) -> None:
        if not self._by_name and self.entries:
            self._by_name.update({n: (v, m) for n, v, m in self.entries})

    # -- views -----------------------------------------------------------------

    def get(self, name: str) -> tuple[int, int] | None:
        """(value, mask) of ``name`` or None when the match does not look at it."""
        return self._by_name.get(name)

    def exact_value(self, name: str) -> int | None:
        """The value of ``name`` when it is matched exactly, else None."""
        vm = self._by_name.get(name)
        if vm is None or vm[1] != BY_NAME[name].full:
            return None
        return vm[0]

    def __len__(self) -> int:
        return len(self.entries)

    def sort_key(self) -> tuple[tuple[int, int, int], ...]:
        """A total order on matches (OXM code, value, mask per entry)."""
        return tuple((BY_NAME[n].code, v, m) for n, v, m in self.entries)

    # -- semantics -------------------------------------------------------------

    def matches(self, fields: Mapping[str, int]) -> bool:
        """Does a packet with these OXM field values (``fields.oxm_fields``) match?"""
        get = fields.get
        for name, value, mask in self.entries:
            if get(name, 0) & mask != value:
                return False
        return True

    def covers(self, other: OxmMatch) -> bool:
        """Every packet ``other`` matches is matched by ``self`` (field bit-vectors)."""
        for name, value, mask in self.entries:
            vm = other._by_name.get(name)
            if vm is None:
                return False
            ovalue, omask = vm
            if mask & ~omask or ovalue & mask != value:
                return False
        return True

    def overlaps(self, other: OxmMatch) -> bool:
        """Some packet is matched by both (field bit-vectors)."""
        theirs = other._by_name
        for name, value, mask in self.entries:
            vm = theirs.get(name)
            if vm is not None and (value ^ vm[0]) & mask & vm[1]:
                return False
        return True

    # -- other forms -------------------------------------------------------------

    def to_ofp(self) -> parser.OFPMatch:
        """os-ken's ``OFPMatch`` with the same entries (addresses in text form)."""
        kwargs: dict[str, Any] = {}
        for name, value, mask in self.entries:
            spec = BY_NAME[name]
            v: Any = _ofp_value(spec, value)
            kwargs[name] = v if mask == spec.full else (v, _ofp_value(spec, mask))
        return parser.OFPMatch(**kwargs)

    @classmethod
    def from_ofp(cls, m: parser.OFPMatch) -> OxmMatch:
        """Validate os-ken's ``OFPMatch`` (parsed or built); OFError as the switch would send."""
        entries: list[tuple[str, int, int | None]] = []
        for name, raw in m._fields2:
            spec = _spec(name)
            if isinstance(raw, tuple):
                entries.append((name, parse_value(spec, raw[0]), parse_value(spec, raw[1])))
            else:
                entries.append((name, parse_value(spec, raw), None))
        return cls.from_entries(entries)

    def to_json(self) -> list[list[Any]]:
        return [[n, render_value(BY_NAME[n], v), render_value(BY_NAME[n], m)] for n, v, m in self.entries]

    @classmethod
    def from_json(cls, d: list[list[Any]]) -> OxmMatch:
        return cls.from_entries((n, parse_value(BY_NAME[n], v), parse_value(BY_NAME[n], m)) for n, v, m in d)

    def __str__(self) -> str:
        """ovs-ofctl text (``fieldspec.OVS_NAMES`` where ovs-ofctl spells a field its own way)."""
        return ",".join(_render_entry(BY_NAME[n], v, m) for n, v, m in self.entries)


def _render_entry(spec: FieldSpec, value: int, mask: int) -> str:
    name = ovs_name(spec.name)
    if spec.name in ("in_port", "in_phy_port") and value in _RESERVED_PORTS:
        return f"{name}={_RESERVED_PORTS[value]}"
    if mask == spec.full:
        return f"{name}={render_value(spec, value)}"
    if spec.kind in ("mac", "ipv4", "ipv6"):
        return f"{name}={render_value(spec, value)}/{render_value(spec, mask)}"
    return f"{name}={value:#x}/{mask:#x}"


_RESERVED_PORTS = {ofp.OFPP_CONTROLLER: "CONTROLLER", ofp.OFPP_LOCAL: "LOCAL", ofp.OFPP_IN_PORT: "IN_PORT",
                   ofp.OFPP_TABLE: "TABLE", ofp.OFPP_NORMAL: "NORMAL", ofp.OFPP_FLOOD: "FLOOD", ofp.OFPP_ALL: "ALL",
                   ofp.OFPP_ANY: "ANY"}
"""ovs-ofctl names of the reserved port numbers (it reads 32-bit numbers as OpenFlow 1.0 ports)."""


def _ofp_value(spec: FieldSpec, value: int) -> Any:
    if spec.kind in ("mac", "ipv4", "ipv6"):
        return render_value(spec, value)
    return value


def _check_prereqs(spec: FieldSpec, seen: Mapping[str, tuple[int, int]]) -> None:
    for dep, allowed in spec.prereqs:
        vm = seen.get(dep)
        dep_spec = BY_NAME[dep]
        if dep == "vlan_vid":
            ok = vm is not None and bool(vm[0] & vm[1] & VID_PRESENT)
        else:
            ok = vm is not None and vm[1] == dep_spec.full and (not allowed or vm[0] in allowed)
        if not ok:
            want = "present" if not allowed else " or ".join(f"{a:#x}" if dep == "eth_type" else str(a)
                                                             for a in allowed)
            raise bad_match(ofp.OFPBMC_BAD_PREREQ, f"{spec.name} needs {dep} = {want} in the same match",
                            f"add {dep}={want.split(' or ')[0]} to the match")


__all__ = ["Entry", "OFError", "OxmMatch", "check_value", "parse_value", "render_value"]
