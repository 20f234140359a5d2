"""One OpenFlow 1.3 switch in the header-space engine (see ``engine.py``): a pipeline compiled per
table (:class:`Compiled13`), a table's entries translated into wildcards over the injected header
(:class:`_TableView`), and a branch run through tables, instructions, groups and action sets
(:class:`_Switch13`), ending in emissions or drops.
"""


from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.headerspace.of13.symbolic import (
    _UNSUPPORTED,
    Src,
    St,
    Sym,
    Unsupported13,
    _pop_mpls,
    _pop_vlan,
    _push_mpls,
    _push_vlan,
    _set_field,
)
from netsleuth.invariants.headerspace.terms import Term, make_term, term_empty
from netsleuth.model.of13.actions import (
    Action,
    Group,
    Output,
    PopMpls,
    PopVlan,
    PushMpls,
    PushVlan,
    SetField,
    SetQueue,
)
from netsleuth.model.of13.actionset import ActionSet
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.headerbits import SHIFT13, WIDTH13
from netsleuth.model.of13.pipeline import MAX_GROUP_DEPTH, Pipeline13


# --------------------------------------------------------------------------- one switch
class Emission(NamedTuple):
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
    mapping and pipeline state, grouped by mask for probing (as the 1.0 compiler does).

    Entries are keyed by their *rank*, an int that orders them as the table does (an index
    for a view built once; the incremental engine's ranks leave gaps, so that an entry can be
    put in or taken out (:meth:`put`, :meth:`drop`) without touching the others)."""

    __slots__ = ("entries", "ws", "groups", "subs", "memo", "_gone", "bits")

    def __init__(self, ranked: Iterable[tuple[int, FlowEntry13, tuple[int, int]]] = ()) -> None:
        self.entries: dict[int, FlowEntry13] = {}
        self.ws: dict[int, tuple[int, int]] = {}
        self.groups: dict[int, dict[int, list[int]]] = {}
        self.subs: dict[tuple[int, int], dict[int, list[int]]] = {}
        self.memo: dict[Term, dict[Any, Term | None]] | None = None   # see _split_term
        self._gone: set[int] = set()   # ranks dropped while the memo knew them
        groups = self.groups
        bits = 0   # every bit some entry tests (or once tested)
        for r, e, (v, m) in ranked:
            bits |= m
            self.entries[r] = e
            self.ws[r] = (v, m)
            by = groups.get(m)
            if by is None:
                by = groups[m] = {}
            lst = by.get(v)
            if lst is None:
                by[v] = [r]
            else:
                lst.append(r)
        self.bits = bits

    def put(self, r: int, e: FlowEntry13, w: tuple[int, int]) -> None:
        """Add the entry of rank ``r`` (its wildcard ``w``), keeping the probing indexes."""
        v, m = w
        if r in self._gone:   # a rank given again: the memo's pieces for it are another entry's
            self._gone.clear()
            if self.memo:
                self.memo.clear()
        self.entries[r] = e
        self.ws[r] = w
        self.bits |= m
        self.groups.setdefault(m, {}).setdefault(v, []).append(r)
        for (gm, common), sub in self.subs.items():
            if gm == m:
                sub.setdefault(v & common, []).append(r)

    def drop(self, r: int) -> None:
        """Take out the entry of rank ``r`` (nothing when the view does not hold it)."""
        w = self.ws.pop(r, None)
        if w is None:
            return
        del self.entries[r]
        if self.memo:
            self._gone.add(r)
        v, m = w
        by = self.groups[m]
        _unlist(by, v, r)
        if not by:
            del self.groups[m]
            for k in [k for k in self.subs if k[0] == m]:
                del self.subs[k]
            return
        for (gm, common), sub in self.subs.items():
            if gm == m:
                _unlist(sub, v & common, r)

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

    def classify(self, hs: HS13) -> list[tuple[int | None, HS13]]:
        """Split ``hs`` by the entry each part hits (None: no entry).  When a term already
        fixes every bit an entry tests (the usual case after the first hop), its own
        differences stay as they are and only the entry's shadowers are clipped to it."""
        pieces: dict[int | None, list[Term]] = {}
        ws = self.ws
        bits = self.bits
        lv = lm = -1
        whole = True   # no term was split
        cands: list[int] = []
        for t in hs.terms:
            v, m, ds = t
            # the candidates depend on the bits some entry tests only: terms that differ
            # elsewhere (the tag-count shapes of one header class, say) share them
            kv, km = v & bits, m & bits
            if kv != lv or km != lm:
                cands = self.candidates(v, m)
                lv, lm = kv, km
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
            self._split_term(t, cands, pieces)
            whole = False
        if len(pieces) == 1:
            only, ts = next(iter(pieces.items()))
            # unsplit terms go to their pieces as they are, in order: one piece is then all of hs
            if whole or (len(ts) == len(hs.terms) and all(a is b for a, b in zip(ts, hs.terms, strict=True))):
                return [(only, hs)]  # one entry takes all of it, unchanged
        return [(i, HS13(ts)) for i, ts in pieces.items()]

    def _split_term(self, t: Term, cands: list[int], pieces: dict[int | None, list[Term]]) -> None:
        """:meth:`classify` for a term that its best candidate does not take whole: each candidate
        gets the term's headers no better-ranked candidate takes; what none takes is a miss.

        A view kept across messages (``memo`` not None) remembers each piece by the term, the
        candidate's rank and the ranks of the candidates that shadow it: a rank stands for one
        wildcard as long as the view lives, so the piece is the same whenever they are."""
        ws = self.ws
        v, m, ds = t
        covered = False
        tm: dict[Any, Term | None] | None = None
        if self.memo is not None:
            tm = self.memo.get(t)
            if tm is None:
                if len(self.memo) >= _MEMO_TERMS:
                    self.memo.clear()
                    self._gone.clear()
                tm = self.memo[t] = {}
        # Candidates seen so far, by mask: two wildcards of one mask overlap only when
        # their values are equal, so only the other masks need a scan (a table of one
        # pattern, the usual shape, costs a probe per candidate instead of a scan).
        seen: dict[int, dict[int, list[int]]] = {}
        for i in cands:
            ev, em = ws[i]
            # The better-ranked entries that can take headers of this term are exactly the
            # candidates before this one (candidates overlap the term, in rank order).
            earlier = _earlier(seen, ev, em)
            seen.setdefault(em, {}).setdefault(ev, []).append(i)
            inside = not (em & ~m)  # the term lies inside the entry's wildcard
            if inside:
                covered = True
                if not earlier:
                    # Every header of the term hits this entry: none is left for the rest.
                    pieces.setdefault(i, []).append(t)
                    break
            if tm is None:
                nt = _piece(t, ev, em, tuple(ws[j] for j in earlier), inside)
            else:
                key = (i, *earlier)
                if key in tm:
                    nt = tm[key]
                else:
                    nt = tm[key] = _piece(t, ev, em, tuple(ws[j] for j in earlier), inside)
            if nt is not None:
                pieces.setdefault(i, []).append(nt)
        if covered:
            return  # some candidate takes every header of the term
        if tm is None:
            miss = _miss(t, tuple(ws[i] for i in cands))
        else:
            mkey: tuple[int | None, ...] = (None, *cands)
            if mkey in tm:
                miss = tm[mkey]
            else:
                miss = tm[mkey] = _miss(t, tuple(ws[i] for i in cands))
        if miss is not None:
            pieces.setdefault(None, []).append(miss)


_MEMO_TERMS = 256   # terms a kept view remembers pieces for (then it forgets them all)


def _piece(t: Term, ev: int, em: int, sh: tuple[tuple[int, int], ...], inside: bool) -> Term | None:
    """The headers of ``t`` that the entry (ev, em) takes when the entries ``sh`` rank before
    it (None: none)."""
    v, m, ds = t
    if inside:
        extra = make_term(v, m, sh)
        nt: Term | None = None if extra is None else (v, m, ds + extra[2])
    else:
        nt = make_term(v | ev, m | em, ds + sh)
    return None if nt is None or term_empty(nt, WIDTH13) else nt


def _miss(t: Term, ws: tuple[tuple[int, int], ...]) -> Term | None:
    """The headers of ``t`` that none of the wildcards ``ws`` takes (None: none)."""
    v, m, ds = t
    miss = make_term(v, m, ds + ws)
    return None if miss is None or term_empty(miss, WIDTH13) else miss


def _earlier(seen: dict[int, dict[int, list[int]]], ev: int, em: int) -> list[int]:
    """The candidates in ``seen`` (by mask, then value) whose wildcard overlaps (ev, em), in rank order."""
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
    if len(earlier) > 1:
        earlier.sort()
    return earlier


def _unlist(by: dict[int, list[int]], key: int, r: int) -> None:
    lst = by[key]
    lst.remove(r)
    if not lst:
        del by[key]


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
        # (port, in_port, id(sym)) -> (sym, what an output there emits): ports are part of the signature
        self.emissions: dict[tuple[int, int, int], tuple[Sym, tuple[Emission, ...]]] = {}

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
            tv = self._views[key] = self._build(t, sym, in_port, md, tid)
        return tv

    def _build(self, t: int, sym: Sym, in_port: int, md: int, tid: int) -> _TableView:
        """A new view of table ``t`` (entries by rank: here their index in the table)."""
        by, entries = self._table(t)
        ranked = []
        for r in sorted(by.get(in_port, []) + by.get(None, [])):
            e = entries[r]
            w = _translate(e, sym, in_port, md, tid)
            if w is not None:
                ranked.append((r, e, w))
        return _TableView(ranked)


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
        key = (port, in_port, id(sym))
        got = self.comp.emissions.get(key)
        if got is None or got[0] is not sym:
            if len(self.comp.emissions) >= 4096:   # many mappings (rewrites): start over
                self.comp.emissions.clear()
            sent = (port,) if port == ofp.OFPP_CONTROLLER else self.pipe.output_ports(port, in_port)
            got = self.comp.emissions[key] = (sym, tuple(Emission(p, sym) for p in sent))
        ems = got[1]
        if not ems:
            why = (f"outputs to its own in port {in_port}, which sends nothing (it takes OFPP_IN_PORT)"
                   if port == in_port else f"outputs to port {port}, which the switch does not have"
                   if port <= ofp.OFPP_MAX else f"outputs to {_port_name(port)}, which reaches no port")
            return Branch13(b.st, b.emits, b.rules, b.choices, lost=why)
        return Branch13(b.st, b.emits + ems, b.rules, b.choices, lost=b.lost)

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
