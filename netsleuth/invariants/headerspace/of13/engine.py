"""Header Space Analysis through OpenFlow 1.3 pipelines (``model.of13.Pipeline13``).

The 1.0 engine (:mod:`netsleuth.invariants.headerspace.engine`) rewrites header
sets in place and undoes rewrites with preimages.  A 1.3 pipeline also
pushes and pops VLAN tags and MPLS labels, copies fields between tags,
hides the IP header under a label stack and carries metadata between
tables, so this engine keeps two things per branch instead:

* ``orig``: the set of *injected* headers the branch stands for
  (:class:`~netsleuth.invariants.headerspace.of13.space.HS13` over ``model.of13.headerbits``);
* ``sym``: what the packet's current header is in terms of the injected
  one: every field is either a constant (set_field, a pushed tag, a label)
  or "the injected header's field F" (untouched, or moved by a push/pop).

A rule's match then translates into a wildcard over the injected header
(constants are decided at once, moved fields test their source bits), so
classification, lazy differences and emptiness work on injected headers
directly and no preimage is needed.  Conditions the model applies to a
rewrite (set_field on an IPv4 field only for IPv4 frames, pop_vlan only
with a tag, pop_mpls re-reading the payload as the given ethertype) split
the branch the same way.  Metadata and tunnel_id start at 0 at every switch
and only ever take constant values, so they are constants of the branch.

Semantics follow ``Pipeline13.process`` hop by hop (the property test in
``tests/test_headerspace13.py`` checks them frame by frame):

* tables from 0; a table with no matching entry drops the packet and
  discards its action set; apply-actions act at once, then the entry's
  clear/write and write-metadata (``Instructions.next_action_set`` and
  ``next_metadata``, what the pipeline runs), goto-table; the action set
  runs in the spec's order (``ActionSet.ordered``) when no goto is left;
* groups: the buckets ``GroupTable.candidates`` names (ALL every bucket on
  its own copy, INDIRECT its bucket, FAST_FAILOVER the first live one);
  SELECT *any* of its candidates -- the hash is not known in advance, so
  each bucket is a possible path, and a result that needs every choice
  (reachability) takes all of them into account;
* outputs go where ``Pipeline13.output_ports`` sends them (a plain output
  to the in port sends nothing, FLOOD/ALL over the pipeline's ports);
  CONTROLLER: handled by the controller; LOCAL/NORMAL: dropped (nothing in
  the model handles them);
* between switches: live links (the view), loops when a (switch, in_port)
  repeats, drops at down switches and ports without a live link.

Two kinds of "sent nowhere" are told apart, as on 1.0.  A blackhole
(``Reach13.drops``): forwarding meant to send the packet somewhere and it
went nowhere -- an output to a port the switch does not have or to its own
in port, a group with no live bucket or whose buckets send nothing, and
the network-level drops above.  A drop on purpose (``Reach13.filtered``):
no output or group action ran at all -- an entry whose instructions are
empty or clear the action set (an ACL deny, a filter of some ethertype),
or a table miss with no table-miss entry.  The latter is what the spec
(5.4) makes a table do since 1.3 unless the controller installs a
table-miss entry, and what Open vSwitch does: the controller chose it, as
it chooses a drop rule (1.0 sent misses to the controller instead).

Not modelled (typed error :class:`Unsupported13`): TTL actions (their
effect depends on the TTL's value), PBB push/pop, set_field of IPv6 ND
fields, pop_mpls to ARP/PBB of a payload that is something else.  Meters
are ignored (a rate cannot be exceeded by a header set).
"""

from __future__ import annotations

import itertools
import weakref
from collections import defaultdict
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.errors import NetsleuthError
from netsleuth.invariants.headerspace.ingress import ingress_points
from netsleuth.invariants.headerspace.of13.space import HS13, union13
from netsleuth.invariants.headerspace.space import Term, make_term, term_empty
from netsleuth.invariants.view import NetworkView
from netsleuth.model.of13.actions import (
    Action,
    CopyTtlIn,
    CopyTtlOut,
    DecMplsTtl,
    DecNwTtl,
    Group,
    Output,
    PopMpls,
    PopPbb,
    PopVlan,
    PushMpls,
    PushPbb,
    PushVlan,
    SetField,
    SetMplsTtl,
    SetNwTtl,
    SetQueue,
)
from netsleuth.model.of13.actionset import ActionSet
from netsleuth.model.of13.fieldspec import VID_PRESENT
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.headerbits import FULL13, SHIFT13, TAG_SHAPES, WIDTH13
from netsleuth.model.of13.headers import ETH_PBB, MPLS_TYPES
from netsleuth.model.of13.pipeline import MAX_GROUP_DEPTH, Pipeline13

Port = tuple[str, int]
Src = int | str          # a constant value, or the injected header's field of that name
DEFAULT_BUDGET13 = 200_000  # hops per ingress before giving up (Analysis13.truncated)


class Unsupported13(NetsleuthError):
    """The 1.3 header-space engine cannot decide a rule exactly."""


def pipeline13_of(view: NetworkView, name: str) -> Pipeline13 | None:
    """The OpenFlow 1.3 pipeline of switch ``name`` in ``view``, or None for a 1.0 switch.

    The one place the engine reads a switch's forwarding state: ``view.pipeline(name)``
    (a 1.0 FlowTable or a Pipeline13, from ``Switch.pipeline``) where the view has it; a
    view built by hand may also hold the Pipeline13 itself in ``view.switches``."""
    sw = view.switches.get(name)
    if isinstance(sw, Pipeline13):
        return sw
    get = getattr(view, "pipeline", None)
    got = get(name) if get is not None and sw is not None else None
    return got if isinstance(got, Pipeline13) else None


def has_of13(view: NetworkView) -> bool:
    """Whether any switch of ``view`` runs an OpenFlow 1.3 pipeline."""
    return any(pipeline13_of(view, name) is not None for name in view.switches)


# --------------------------------------------------------------------------- symbolic header
_L3_NAMES = frozenset((
    "ip_dscp", "ip_ecn", "ip_proto", "ipv4_src", "ipv4_dst", "tcp_src", "tcp_dst", "udp_src", "udp_dst",
    "sctp_src", "sctp_dst", "icmpv4_type", "icmpv4_code", "arp_op", "arp_spa", "arp_tpa", "arp_sha", "arp_tha",
    "ipv6_src", "ipv6_dst", "ipv6_flabel", "icmpv6_type", "icmpv6_code", "ipv6_nd_target", "ipv6_nd_sll",
    "ipv6_nd_tll", "ipv6_exthdr", "pbb_isid"))
_V4_SET = frozenset(("ipv4_src", "ipv4_dst"))
_V6_SET = frozenset(("ipv6_src", "ipv6_dst", "ipv6_flabel"))
_IP_SET = frozenset(("ip_dscp", "ip_ecn"))
_ARP_SET = frozenset(("arp_op", "arp_spa", "arp_tpa", "arp_sha", "arp_tha"))
_L4_SET: dict[str, tuple[tuple[int, ...], int]] = {   # field -> (eth types, ip_proto)
    "tcp_src": ((0x0800, 0x86DD), 6), "tcp_dst": ((0x0800, 0x86DD), 6),
    "udp_src": ((0x0800, 0x86DD), 17), "udp_dst": ((0x0800, 0x86DD), 17),
    "sctp_src": ((0x0800, 0x86DD), 132), "sctp_dst": ((0x0800, 0x86DD), 132),
    "icmpv4_type": ((0x0800,), 1), "icmpv4_code": ((0x0800,), 1),
    "icmpv6_type": ((0x86DD,), 58), "icmpv6_code": ((0x86DD,), 58),
}
Tag = tuple[Src, Src]     # (vid with OFPVID_PRESENT, pcp)
Label = tuple[int, int, int]  # (label, tc, bos)


class Sym:
    """The current header in terms of the injected one (immutable; hashable by ``key``).

    ``f``: fields changed from the injected header (eth_src/eth_dst/eth_type, L3/L4);
    ``tags``: None while the injected tags were never split by count, else outermost
    first; ``mpls``: labels pushed here, top first.  The IP header is visible when no
    label is on and the current eth_type is the injected one (``f`` has no eth_type):
    after a pop_mpls to another ethertype the payload does not parse as it."""

    __slots__ = ("f", "tags", "mpls", "key")

    def __init__(self, f: Mapping[str, Src] | None = None, tags: tuple[Tag, ...] | None = None,
                 mpls: tuple[Label, ...] = ()) -> None:
        self.f: dict[str, Src] = dict(f or {})
        self.tags = tags
        self.mpls = mpls
        self.key = (tuple(sorted(self.f.items(), key=lambda kv: kv[0])), tags, mpls)

    def replace(self, **kw: Any) -> Sym:
        return Sym(kw.get("f", self.f), kw.get("tags", self.tags), kw.get("mpls", self.mpls))

    @property
    def l3_visible(self) -> bool:
        return not self.mpls and "eth_type" not in self.f

    def view(self, name: str) -> Src:
        """What OXM field ``name`` reads (``fields.oxm_fields`` of the current frame)."""
        if name in _L3_NAMES:
            if not self.l3_visible:
                return 0
            return self.f.get(name, name)
        if name in ("vlan_vid", "vlan_pcp"):
            if self.tags is None:
                return name
            if not self.tags:
                return 0
            return self.tags[0][0 if name == "vlan_vid" else 1]
        if name in ("mpls_label", "mpls_tc", "mpls_bos"):
            if not self.mpls:
                return 0
            return self.mpls[0][("mpls_label", "mpls_tc", "mpls_bos").index(name)]
        return self.f.get(name, name)

    def value(self, src: Src, h: int) -> int:
        """A source's value for the injected header ``h`` (packed)."""
        return src if isinstance(src, int) else (h >> SHIFT13[src]) & FULL13[src]

    def frame_of(self, h: int) -> dict[str, Any]:
        """The current header for injected header ``h``: OXM fields as a match reads them,
        plus ``tags`` (every VLAN tag as (vid with OFPVID_PRESENT, pcp), outermost first)."""
        out: dict[str, Any] = {n: self.value(self.view(n), h) for n in _FRAME_FIELDS}
        tags = self.tags
        if tags is None:
            tags = tuple(t for t in (("vlan_vid", "vlan_pcp"), ("vlan1_vid", "vlan1_pcp"))
                         if self.value(t[0], h) & VID_PRESENT)
        out["tags"] = tuple((self.value(v, h), self.value(p, h)) for v, p in tags)
        out["labels"] = self.mpls
        return out


IDENTITY = Sym()
_FRAME_FIELDS = ("eth_dst", "eth_src", "eth_type", "vlan_vid", "vlan_pcp", "mpls_label", "mpls_tc", "mpls_bos",
                 *sorted(_L3_NAMES))


@dataclass(slots=True)
class St:
    """One branch inside a switch: injected headers, current header, pipeline state."""

    orig: HS13
    sym: Sym
    metadata: int = 0
    tunnel_id: int = 0

    def with_orig(self, orig: HS13) -> St:
        return St(orig, self.sym, self.metadata, self.tunnel_id)


def _split_eq(st: St, name: str, values: Sequence[int]) -> list[tuple[bool, St]]:
    """``st`` split by whether current field ``name`` is one of ``values`` (empty parts left out)."""
    s = st.sym.view(name)
    if isinstance(s, int):
        return [(s in values, st)]
    sh = SHIFT13[s]
    full = FULL13[s] << sh
    out: list[tuple[bool, St]] = []
    rest = st.orig
    for val in values:
        w = (val << sh, full)
        part = st.orig.intersect_wc(w)
        if part.terms and not part.is_empty():
            out.append((True, st.with_orig(part)))
        rest = rest.minus_wc(w)
    rest = rest.prune()
    if rest.terms:
        out.append((False, st.with_orig(rest)))
    return out


def _split_tags(st: St) -> list[St]:
    """``st`` with the injected tag count made explicit (0, 1 or 2 tags)."""
    if st.sym.tags is not None:
        return [st]
    out = []
    for n, w in TAG_SHAPES:
        part = st.orig.intersect_wc(w).prune()
        if part.terms:
            tags = (("vlan_vid", "vlan_pcp"), ("vlan1_vid", "vlan1_pcp"))[:n]
            out.append(St(part, st.sym.replace(tags=tags), st.metadata, st.tunnel_id))
    return out


# --------------------------------------------------------------------------- rewrites
def _set_field(st: St, name: str, value: int) -> list[St]:
    """set_field as ``actions.set_field`` does it (no-op where the header is absent)."""
    sym = st.sym
    if name in ("eth_dst", "eth_src"):
        return [st_with(st, sym.replace(f={**sym.f, name: value}))]
    if name in ("vlan_vid", "vlan_pcp"):
        out = []
        for p in _split_tags(st):
            tags = p.sym.tags
            if not tags:
                out.append(p)
                continue
            vid, pcp = tags[0]
            top: Tag = (VID_PRESENT | (value & 0xFFF), pcp) if name == "vlan_vid" else (vid, value)
            out.append(st_with(p, p.sym.replace(tags=(top, *tags[1:]))))
        return out
    if name in ("mpls_label", "mpls_tc"):
        if not sym.mpls:
            return [st]
        lab, tc, bos = sym.mpls[0]
        label: Label = (value, tc, bos) if name == "mpls_label" else (lab, value, bos)
        return [st_with(st, sym.replace(mpls=(label, *sym.mpls[1:])))]
    if name == "tunnel_id":
        return [St(st.orig, sym, st.metadata, value)]
    if name in ("ipv6_nd_target", "ipv6_nd_sll", "ipv6_nd_tll"):
        raise Unsupported13(f"set_field {name} (rewrites depend on the ND options a packet carries)",
                            "leave IPv6 ND fields unmodified, or check this network with concrete packets")
    if not sym.l3_visible or name == "pbb_isid":
        return [st]
    if name in _V4_SET or name in _V6_SET or name in _IP_SET or name in _ARP_SET:
        types = ((0x0800,) if name in _V4_SET else (0x86DD,) if name in _V6_SET else
                 (0x0806,) if name in _ARP_SET else (0x0800, 0x86DD))
        return [st_with(p, sym.replace(f={**sym.f, name: value})) if hit else p
                for hit, p in _split_eq(st, "eth_type", types)]
    spec = _L4_SET.get(name)
    if spec is None:
        return [st]
    l4_types, proto = spec
    out = []
    for hit, p in _split_eq(st, "eth_type", l4_types):
        if not hit:
            out.append(p)
            continue
        for hit2, q in _split_eq(p, "ip_proto", (proto,)):
            out.append(st_with(q, sym.replace(f={**sym.f, name: value})) if hit2 else q)
    return out


def st_with(st: St, sym: Sym) -> St:
    return St(st.orig, sym, st.metadata, st.tunnel_id)


def _push_vlan(st: St) -> list[St]:
    out = []
    for p in _split_tags(st):
        tags = p.sym.tags or ()
        new: Tag = tags[0] if tags else (VID_PRESENT, 0)
        out.append(st_with(p, p.sym.replace(tags=(new, *tags))))
    return out


def _pop_vlan(st: St) -> list[St]:
    out = []
    for p in _split_tags(st):
        tags = p.sym.tags
        out.append(st_with(p, p.sym.replace(tags=tags[1:])) if tags else p)
    return out


def _push_mpls(st: St, ethertype: int) -> list[St]:
    sym = st.sym
    if sym.mpls:
        lab, tc, _bos = sym.mpls[0]
        return [st_with(st, sym.replace(f={**sym.f, "eth_type": ethertype}, mpls=((lab, tc, 0), *sym.mpls)))]
    return [st_with(st, sym.replace(f={**sym.f, "eth_type": ethertype}, mpls=((0, 0, 1),)))]


def _pop_mpls(st: St, ethertype: int) -> list[St]:
    sym = st.sym
    if not sym.mpls:
        return [st]
    rest = sym.mpls[1:]
    if rest:
        if ethertype not in MPLS_TYPES:
            raise Unsupported13(f"pop_mpls:{ethertype:#06x} with labels left below (the model rejects the frame)",
                                "pop inner labels with an MPLS ethertype (0x8847/0x8848)")
        return [st_with(st, sym.replace(f={**sym.f, "eth_type": ethertype}, mpls=rest))]
    # The payload is re-read as ``ethertype``: the injected L3 header again when that is what
    # it was, else a header that does not parse (IPv4/IPv6 check their version nibble).
    f_vis = {k: v for k, v in sym.f.items() if k != "eth_type"}
    out = []
    for hit, p in _split_eq(St(st.orig, Sym(f_vis, sym.tags), st.metadata, st.tunnel_id), "eth_type",
                            (ethertype,)):
        if hit:
            out.append(p)
        else:
            if ethertype in (0x0806, ETH_PBB):
                raise Unsupported13(f"pop_mpls:{ethertype:#06x} of a payload that may be another protocol",
                                    "pop to the ethertype the packet carried before its labels")
            out.append(st_with(p, Sym({**f_vis, "eth_type": ethertype}, sym.tags)))
    return out


_UNSUPPORTED = (CopyTtlIn, CopyTtlOut, DecMplsTtl, DecNwTtl, SetMplsTtl, SetNwTtl, PushPbb, PopPbb)


# --------------------------------------------------------------------------- one switch
@dataclass(frozen=True, slots=True)
class Emission:
    port: int          # a port, OFPP_CONTROLLER, or a special port
    sym: Sym


@dataclass(slots=True)
class Branch13:
    """One path through a switch for the headers ``st.orig``: what it sent, the rules it took
    ((table id, entry) in order), the SELECT choices it made, and why it ended."""

    st: St
    emits: tuple[Emission, ...] = ()
    rules: tuple[tuple[int, FlowEntry13], ...] = ()
    choices: tuple[tuple[int, int], ...] = ()
    end: str = ""
    lost: str = ""   # why the last output or group it ran sent nothing ("" : none did)


def _sent_nothing(bs: list[Branch13], before: int, why: str) -> list[Branch13]:
    """Mark the branches a group action added no copy to: forwarding aimed at the group."""
    for b in bs:
        if len(b.emits) == before and not b.lost:
            b.lost = why
    return bs


def _port_name(port: int) -> str:
    names = {ofp.OFPP_FLOOD: "FLOOD", ofp.OFPP_ALL: "ALL", ofp.OFPP_IN_PORT: "IN_PORT", ofp.OFPP_TABLE: "TABLE"}
    return names.get(port, f"port {port:#x}")


class _TableView:
    """The entries of one table as wildcards over injected headers, for one current-header
    mapping and pipeline state, grouped by mask for probing (as the 1.0 compiler does)."""

    __slots__ = ("entries", "ws", "groups", "subs", "_shadow")

    def __init__(self, entries: list[FlowEntry13], ws: list[tuple[int, int]]) -> None:
        self.entries = entries
        self.ws = ws
        self.groups: dict[int, dict[int, list[int]]] = {}
        for i, (v, m) in enumerate(ws):
            self.groups.setdefault(m, {}).setdefault(v, []).append(i)
        self.subs: dict[tuple[int, int], dict[int, list[int]]] = {}
        self._shadow: dict[int, tuple[tuple[int, int], ...]] = {}

    def candidates(self, v: int, m: int) -> list[int]:
        out: list[int] = []
        for gm, by in self.groups.items():
            if not (gm & ~m):
                lst = by.get(v & gm)
            else:
                common = gm & m
                sub = self.subs.get((gm, common))
                if sub is None:
                    sub = {}
                    for key, idx in by.items():
                        sub.setdefault(key & common, []).extend(idx)
                    self.subs[(gm, common)] = sub
                lst = sub.get(v & common)
            if lst:
                out.extend(lst)
        if len(out) > 1:
            out.sort()
        return out

    def shadowers(self, i: int) -> tuple[tuple[int, int], ...]:
        sh = self._shadow.get(i)
        if sh is None:
            v, m = self.ws[i]
            sh = self._shadow[i] = tuple(self.ws[j] for j in self.candidates(v, m) if j < i)
        return sh

    def classify(self, hs: HS13) -> list[tuple[int | None, HS13]]:
        """Split ``hs`` by the entry each part hits (None: no entry).  When a term already
        fixes every bit an entry tests (the usual case after the first hop), its own
        differences stay as they are and only the entry's shadowers are clipped to it."""
        pieces: dict[int | None, list[Term]] = {}
        ws = self.ws
        for t in hs.terms:
            v, m, ds = t
            cands = self.candidates(v, m)
            if not cands:
                pieces.setdefault(None, []).append(t)
                continue
            if not (ws[cands[0]][1] & ~m):  # the best candidate takes every header of the term (the usual case)
                got = pieces.get(cands[0])
                if got is None:
                    pieces[cands[0]] = [t]
                else:
                    got.append(t)
                continue
            covered = False
            # Candidates seen so far, by mask: two wildcards of one mask overlap only when
            # their values are equal, so only the other masks need a scan (a table of one
            # pattern, the usual shape, costs a probe per candidate instead of a scan).
            seen: dict[int, dict[int, list[int]]] = {}
            for i in cands:
                ev, em = ws[i]
                # The better-ranked entries that can take headers of this term are exactly the
                # candidates before this one (candidates overlap the term, in rank order).
                earlier: list[int] = []
                for gm, by in seen.items():
                    if gm == em:
                        same = by.get(ev)
                        if same:
                            earlier.extend(same)
                    else:
                        for gv, idx in by.items():
                            if not ((gv ^ ev) & gm & em):
                                earlier.extend(idx)
                seen.setdefault(em, {}).setdefault(ev, []).append(i)
                if len(earlier) > 1:
                    earlier.sort()
                sh = tuple(ws[j] for j in earlier)
                if not (em & ~m):  # inside the entry's wildcard
                    covered = True
                    if not sh:
                        # Every header of the term hits this entry: none is left for the rest.
                        pieces.setdefault(i, []).append(t)
                        break
                    extra = make_term(v, m, sh)
                    nt: Term | None = None if extra is None else (v, m, ds + extra[2])
                else:
                    nt = make_term(v | ev, m | em, ds + sh)
                if nt is None or term_empty(nt, WIDTH13):
                    continue
                pieces.setdefault(i, []).append(nt)
            if covered:
                continue  # some candidate takes every header of the term
            miss = make_term(v, m, ds + tuple(ws[i] for i in cands))
            if miss is not None and not term_empty(miss, WIDTH13):
                pieces.setdefault(None, []).append(miss)
        if len(pieces) == 1:
            only, ts = next(iter(pieces.items()))
            if len(ts) == len(hs.terms) and all(a is b for a, b in zip(ts, hs.terms, strict=True)):
                return [(only, hs)]  # one entry takes all of it, unchanged
        return [(i, HS13(ts)) for i, ts in pieces.items()]


def _translate(entry: FlowEntry13, sym: Sym, in_port: int, md: int, tid: int) -> tuple[int, int] | None:
    """The injected headers ``entry`` matches given the current mapping, or None for none."""
    v = m = 0
    for name, val, mask in entry.match.entries:
        if name == "in_port" or name == "in_phy_port":
            s: Src = in_port
        elif name == "metadata":
            s = md
        elif name == "tunnel_id":
            s = tid
        else:
            s = sym.view(name)
        if isinstance(s, int):
            if s & mask != val:
                return None
        else:
            sh = SHIFT13[s]
            fv, fm = val << sh, mask << sh
            if (v ^ fv) & m & fm:
                return None
            v |= fv
            m |= fm
    return (v, m)


class Compiled13:
    """A pipeline's tables seen through current-header mappings, cached per mapping.

    Valid while the tables are unchanged (``signature``: the entries and their
    instruction objects, which a MODIFY replaces)."""

    def __init__(self, pipe: Pipeline13) -> None:
        self._pipe = weakref.ref(pipe)   # the cache is keyed weakly on the pipeline
        self.signature = signature13(pipe)
        self._by_port: dict[int, tuple[dict[int | None, list[int]], list[FlowEntry13]]] = {}
        self._views: dict[tuple[Any, ...], _TableView] = {}

    @property
    def pipe(self) -> Pipeline13:
        p = self._pipe()
        assert p is not None, "a compiled pipeline outlived its pipeline"
        return p

    def _table(self, t: int) -> tuple[dict[int | None, list[int]], list[FlowEntry13]]:
        got = self._by_port.get(t)
        if got is None:
            entries = self.pipe.tables.entries(t)
            by: dict[int | None, list[int]] = {}
            for i, e in enumerate(entries):
                ip = e.match.get("in_port")
                by.setdefault(None if ip is None else ip[0], []).append(i)
            got = self._by_port[t] = (by, entries)
        return got

    def view(self, t: int, sym: Sym, in_port: int, md: int, tid: int) -> _TableView:
        key = (t, sym.key, in_port, md, tid)
        tv = self._views.get(key)
        if tv is None:
            by, entries = self._table(t)
            idx = sorted(by.get(in_port, []) + by.get(None, []))
            es, ws = [], []
            for i in idx:
                w = _translate(entries[i], sym, in_port, md, tid)
                if w is not None:
                    es.append(entries[i])
                    ws.append(w)
            tv = self._views[key] = _TableView(es, ws)
        return tv


def signature13(pipe: Pipeline13) -> tuple[Any, ...]:
    """Identity of everything the analysis reads from a pipeline (entries, their
    instructions, groups, port states)."""
    flows = tuple((id(e), id(e.instructions)) for e in pipe.tables)
    groups = tuple((gid, g.type, g.buckets) for gid, g in sorted(pipe.groups.groups.items()))
    ports = tuple(sorted(pipe.ports.items()))
    return (flows, groups, ports)


class _Switch13:
    """Runs branches through one pipeline (``Pipeline13.process`` over header sets)."""

    def __init__(self, comp: Compiled13, node_ids: itertools.count[int], alts: dict[int, int]) -> None:
        self.comp = comp
        self.pipe = comp.pipe
        self.node_ids = node_ids
        self.alts = alts

    def run(self, orig: HS13, sym: Sym, in_port: int) -> list[Branch13]:
        out: list[Branch13] = []
        self._tables(Branch13(St(orig, sym)), in_port, 0, ActionSet(), out)
        return out

    def _tables(self, br: Branch13, in_port: int, table_id: int, aset: ActionSet, out: list[Branch13]) -> None:
        st = br.st
        tv = self.comp.view(table_id, st.sym, in_port, st.metadata, st.tunnel_id)
        for i, piece in tv.classify(st.orig):
            b = Branch13(st.with_orig(piece), br.emits, br.rules, br.choices, lost=br.lost)
            if i is None:
                b.end = f"table {table_id}: no rule matches and there is no table-miss entry (drop)"
                out.append(b)
                continue
            entry = tv.entries[i]
            b.rules = br.rules + ((table_id, entry),)
            inst = entry.instructions
            bs = [b]
            if inst.apply:
                bs = self._execute(list(inst.apply), bs, in_port, 0)
            a2 = inst.next_action_set(aset)
            for b2 in bs:
                if inst.metadata is not None:
                    s2 = b2.st
                    b2.st = St(s2.orig, s2.sym, inst.next_metadata(s2.metadata), s2.tunnel_id)
                if inst.goto is not None:
                    self._tables(b2, in_port, inst.goto, a2, out)
                    continue
                for b3 in self._execute(a2.ordered(), [b2], in_port, 0):
                    b3.end = f"table {table_id}: rule has no output (drop)"
                    out.append(b3)

    def _execute(self, actions: list[Action], bs: list[Branch13], in_port: int, depth: int) -> list[Branch13]:
        for a in actions:
            nxt: list[Branch13] = []
            for b in bs:
                nxt.extend(self._action(a, b, in_port, depth))
            bs = nxt
        return bs

    def _action(self, a: Action, b: Branch13, in_port: int, depth: int) -> list[Branch13]:
        t = type(a)
        if t is Output:
            assert isinstance(a, Output)
            return [self._output(a.port, b, in_port)]
        if t is Group:
            assert isinstance(a, Group)
            return self._group(a.group_id, b, in_port, depth)
        if t is SetQueue:
            return [b]
        if t in _UNSUPPORTED:
            raise Unsupported13(f"action {t.__name__} (its effect depends on TTL values or PBB headers)",
                                "check this network with concrete packets (trace-packet) instead")
        if t is SetField:
            assert isinstance(a, SetField)
            sts = _set_field(b.st, a.field, a.value)
        elif t is PushVlan:
            sts = _push_vlan(b.st)
        elif t is PopVlan:
            sts = _pop_vlan(b.st)
        elif t is PushMpls:
            assert isinstance(a, PushMpls)
            sts = _push_mpls(b.st, a.ethertype)
        elif t is PopMpls:
            assert isinstance(a, PopMpls)
            sts = _pop_mpls(b.st, a.ethertype)
        else:
            return [b]
        return [Branch13(s, b.emits, b.rules, b.choices, lost=b.lost) for s in sts]

    def _output(self, port: int, b: Branch13, in_port: int) -> Branch13:
        sym = b.st.sym
        sent = (port,) if port == ofp.OFPP_CONTROLLER else self.pipe.output_ports(port, in_port)
        if not sent:
            why = (f"outputs to its own in port {in_port}, which sends nothing (it takes OFPP_IN_PORT)"
                   if port == in_port else f"outputs to port {port}, which the switch does not have"
                   if port <= ofp.OFPP_MAX else f"outputs to {_port_name(port)}, which reaches no port")
            return Branch13(b.st, b.emits, b.rules, b.choices, lost=why)
        return Branch13(b.st, b.emits + tuple(Emission(p, sym) for p in sent), b.rules, b.choices, lost=b.lost)

    def _group(self, group_id: int, b: Branch13, in_port: int, depth: int) -> list[Branch13]:
        groups = self.pipe.groups
        g = groups.groups.get(group_id)
        if g is None or depth >= MAX_GROUP_DEPTH:
            why = f"group {group_id} does not exist" if g is None else f"group {group_id} nests too deep"
            return [Branch13(b.st, b.emits, b.rules, b.choices, lost=why)]
        idx = groups.candidates(g, self.pipe.port_live)
        if g.type == ofp.OFPGT_SELECT:
            chosen = idx
            if not chosen:
                return [Branch13(b.st, b.emits, b.rules, b.choices, lost=f"group {group_id} has no live bucket")]
            node = next(self.node_ids)
            self.alts[node] = len(chosen)
            out = []
            for n, i in enumerate(chosen):
                alt = Branch13(b.st, b.emits, b.rules, b.choices + ((node, n),), lost=b.lost)
                out.extend(self._bucket(g.buckets[i].actions, alt, in_port, depth))
            return _sent_nothing(out, len(b.emits), f"group {group_id}'s bucket sends nothing")
        if not idx:
            why = f"group {group_id} has no live bucket" if g.buckets else f"group {group_id} has no buckets"
            return [Branch13(b.st, b.emits, b.rules, b.choices, lost=why)]
        bs = [b]
        for i in idx:
            nxt: list[Branch13] = []
            for cur in bs:
                nxt.extend(self._bucket(g.buckets[i].actions, cur, in_port, depth))
            bs = nxt
        return _sent_nothing(bs, len(b.emits), f"group {group_id}'s buckets send nothing")

    def _bucket(self, actions: tuple[Action, ...], b: Branch13, in_port: int, depth: int) -> list[Branch13]:
        """Run a bucket on a copy: the copy's rewrites stay in the bucket, its outputs and any
        split of the headers come back to the caller's branch."""
        done = self._execute(ActionSet.of(actions).ordered(), [b], in_port, depth + 1)
        st = b.st
        return [Branch13(St(d.st.orig, st.sym, st.metadata, st.tunnel_id), d.emits, d.rules, d.choices, lost=d.lost)
                for d in done]


# --------------------------------------------------------------------------- network
@dataclass
class HsaEvent13:
    """One outcome for the injected headers ``hs``: where (switch or host), the hops, the
    rules taken ("s1 table 0: rule ..."), and the SELECT choices it depends on."""

    hs: HS13
    where: str
    path: tuple[Port, ...]
    rules: tuple[tuple[str, int, FlowEntry13], ...]   # (switch, table id, entry), in order
    choices: tuple[tuple[int, int], ...] = ()
    why: str = ""
    sym: Sym | None = None    # deliveries: the header as it arrives, in terms of the injected one

    def rule_texts(self) -> tuple[str, ...]:
        return tuple(rule_text(*r) for r in self.rules)


@dataclass
class Reach13:
    ingress: Port
    delivered: dict[str, list[HsaEvent13]] = field(default_factory=dict)
    punted: dict[str, list[HsaEvent13]] = field(default_factory=dict)
    drops: list[HsaEvent13] = field(default_factory=list)
    loops: list[HsaEvent13] = field(default_factory=list)
    filtered: dict[str, list[HsaEvent13]] = field(default_factory=dict)  # switch -> dropped on purpose
    alts: dict[int, int] = field(default_factory=dict)   # SELECT node -> number of alternatives
    truncated: bool = False
    hops: int = 0
    memo: dict[Any, Any] = field(default_factory=dict)   # the checks' per-reach results (see of13.checks)


def rule_text(sw: str, table_id: int, entry: FlowEntry13) -> str:
    m = str(entry.match) or "catch-all"
    return f"{sw} table {table_id}: rule {m} priority {entry.priority} actions={entry.instructions.render()}"


class Net13:
    """What the engine needs from a view, looked up once per analysis."""

    def __init__(self, view: NetworkView, cache: MutableMapping[Pipeline13, Compiled13] | None = None) -> None:
        self.view = view
        self._comp: dict[str, Compiled13] = {}
        self._cache = cache if cache is not None else {}
        self.node_ids = itertools.count()

    def compiled(self, name: str) -> Compiled13:
        c = self._comp.get(name)
        if c is None:
            pipe = pipeline13_of(self.view, name)
            if pipe is None:
                raise Unsupported13(f"switch {name} has an OpenFlow 1.0 table in a network of 1.3 pipelines",
                                    "check networks whose switches all speak one OpenFlow version")
            c = self._cache.get(pipe)
            if c is None or c.signature != signature13(pipe):
                c = self._cache[pipe] = Compiled13(pipe)
            self._comp[name] = c
        return c


def explore13(net: Net13, s0: str, p0: int, hs: HS13 | None = None, budget: int = DEFAULT_BUDGET13) -> Reach13:
    """Push ``hs`` (default: every header a host can send) in at ``s0:p0`` through the network."""
    view = net.view
    reach = Reach13((s0, p0))
    start = HS13.injected() if hs is None else hs
    stack: list[tuple[str, int, HS13, Sym, tuple[Port, ...], tuple[tuple[str, int, FlowEntry13], ...],
                      tuple[tuple[int, int], ...]]]
    stack = [(s0, p0, start, IDENTITY, (), (), ())]
    switches = view.switches
    while stack:
        s, p, orig, sym, path, rules, choices = stack.pop()
        reach.hops += 1
        if reach.hops > budget:
            reach.truncated = True
            break
        here = (s, p)
        if here in path:
            reach.loops.append(HsaEvent13(orig, s, path + (here,), rules, choices))
            continue
        path = path + (here,)
        if not view.is_switch_up(s):
            reach.drops.append(HsaEvent13(orig, s, path, rules, choices, "switch is down"))
            continue
        sw = _Switch13(net.compiled(s), net.node_ids, reach.alts)
        for br in sw.run(orig, sym, p):
            r2 = rules + tuple((s, t, e) for t, e in br.rules)
            ch = choices + br.choices
            o = br.st.orig
            if not br.emits:
                rule = rule_text(s, *br.rules[-1]) if br.rules else s
                if br.lost:  # forwarding meant to send them somewhere: a blackhole
                    reach.drops.append(HsaEvent13(o, s, path, r2, ch, f"{rule} {br.lost}"))
                else:       # no output at all: the controller's choice (see Reach13.filtered)
                    why = f"{s} {br.end}" if not br.rules or "no rule" in br.end else f"{rule} has no output (drop)"
                    reach.filtered.setdefault(s, []).append(HsaEvent13(o, s, path, r2, ch, why))
                continue
            for em in br.emits:
                q = em.port
                if q == ofp.OFPP_CONTROLLER:
                    reach.punted.setdefault(s, []).append(HsaEvent13(o, s, path, r2, ch))
                elif q > ofp.OFPP_MAX:
                    reach.drops.append(HsaEvent13(o, s, path, r2, ch, f"output to special port {q:#x}"))
                else:
                    peer = view.peer(s, q)
                    if peer is None:
                        reach.drops.append(HsaEvent13(o, s, path, r2, ch, f"port {q} has no live link"))
                    elif peer[0] in switches:
                        stack.append((peer[0], peer[1], o, em.sym, path, r2, ch))
                    else:
                        reach.delivered.setdefault(peer[0], []).append(HsaEvent13(o, peer[0], path, r2, ch, sym=em.sym))
    return reach


def must_hold(events: Iterable[HsaEvent13], alts: Mapping[int, int]) -> HS13:
    """The injected headers for which some event of ``events`` happens whatever every SELECT
    group chooses.  Choices are independent, so: events needing no choice, plus, for each
    first choice point, the headers that some event holds for under *every* alternative."""
    direct: list[HS13] = []
    nested: dict[int, dict[int, list[HsaEvent13]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if not e.choices:
            direct.append(e.hs)
        else:
            node, n = e.choices[0]
            nested[node][n].append(HsaEvent13(e.hs, e.where, e.path, e.rules, e.choices[1:], e.why))
    out = union13(direct)
    for node, by_alt in sorted(nested.items()):
        if len(by_alt) < alts.get(node, 0):
            continue  # some alternative has no such event at all
        inter: HS13 | None = None
        for n in range(alts[node]):
            got = must_hold(by_alt[n], alts)
            inter = got if inter is None else (inter & got).prune()
            if not inter.terms:
                break
        if inter is not None and inter.terms:
            out = out | inter
    return out


@dataclass
class Analysis13:
    """Results of every ingress of a network of 1.3 pipelines (what the three checks read)."""

    view: NetworkView
    ingresses: list[Port]
    ingress_host: dict[Port, str]
    reaches: dict[Port, Reach13]
    truncated: list[Port] = field(default_factory=list)


_COMPILED13: weakref.WeakKeyDictionary[Pipeline13, Compiled13] = weakref.WeakKeyDictionary()


def forget13() -> None:
    """Forget compiled pipelines and the last results (benchmarks: the next check runs cold)."""
    _COMPILED13.clear()
    _LAST.clear()


def analyze13(view: NetworkView, *, ingress: str = "hosts", budget: int = DEFAULT_BUDGET13,
              cache: bool = True) -> Analysis13:
    """Every header a host can send, pushed in at every ingress point once for all three checks."""
    net = Net13(view, _COMPILED13 if cache else {})
    points = ingress_points(view, ingress)
    key = _state_key(view, net, ingress, budget) if cache else None
    if key is not None and _LAST and _LAST[0] == key:
        reaches = _LAST[1]  # nothing the results depend on changed since the last analysis
    else:
        reaches = {ing: explore13(net, ing[0], ing[1], budget=budget) for ing in points}
        if key is not None:
            _LAST[:] = [key, reaches]
    truncated = [ing for ing, r in reaches.items() if r.truncated]
    return Analysis13(view, list(points), {k: v for k, v in points.items() if v is not None}, reaches, truncated)


_LAST: list[Any] = []   # [state key, reaches] of the last analysis (a check repeated on unchanged tables)


def _state_key(view: NetworkView, net: Net13, ingress: str, budget: int) -> tuple[Any, ...] | None:
    """Everything the reaches depend on: each pipeline (identity and signature), live links and
    switches, the ingress choice.  None when some switch has no 1.3 pipeline."""
    pipes = []
    for name in sorted(view.switches):
        c = net.compiled(name)
        pipes.append((name, id(c.pipe), c.signature))
    links = tuple(sorted(view.link_up.items()))
    up = tuple(sorted((n, view.is_switch_up(n)) for n in view.switches))
    return (tuple(pipes), links, up, ingress, budget)
