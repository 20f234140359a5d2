"""The batch header-space engine: for the common shape of controller tables, where at each
(switch, in_port) all entries share one wildcard pattern, the headers split into disjoint
classes keyed by that pattern's bits and each class moves as one small int; all ingresses
advance together, one hop per round, a cell's classes one numpy array split by outcome in a
few vectorized passes.  What it cannot keep goes to the general engine (``general.py``).
"""


from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np  # the batch engine's classes travel as arrays (see _run_batch)

from netsleuth.gcpause import gc_paused
from netsleuth.invariants.headerspace.codes import F_COMPLEX, F_DROP, F_NOTHING, F_PUNT
from netsleuth.invariants.headerspace.compiled import interner
from netsleuth.invariants.headerspace.general import HsaNet, Port
from netsleuth.model.flowtable import MISS_ACTIONS, SlotMap

# --------------------------------------------------------------------------- batch engine
# A class is a small int: the interned id of the packed bits its ingress pattern T fixes
# (compiled.interner(T)), plus the ingress number above bit 32.  Its header space is
# the wildcard (key, T).  Classes of one pattern move together, one hop per round.
TAG_SHIFT = 32      # a class is (ingress number << TAG_SHIFT) | key id; the checks read classes too
_IDM = (1 << 32) - 1
_FAST_ROUNDS = 32   # classes still moving after this many hops go to the general engine
_F_MISS = -4        # no entry at all: table miss
_DOWN = -100        # drop code: the switch is down


@dataclass
class _Batch:
    """Results of the batch engine: per outcome, the classes (tagged ids) that end there."""

    masks: list[int] = field(default_factory=list)      # per ingress number: its pattern T
    delivered: dict[str, list[int]] = field(default_factory=dict)   # host -> classes
    punted: dict[str, list[int]] = field(default_factory=dict)      # switch -> classes
    filtered: dict[str, list[int]] = field(default_factory=dict)    # switch -> classes a drop rule drops
    drops: dict[tuple[str, int, int], list[int]] = field(default_factory=dict)  # (switch, in_port, code)
    general: list[int] = field(default_factory=list)    # classes handed to the general engine
    ids_at: dict[int, Collection[int]] = field(default_factory=dict)  # ingress number -> its port's key ids
    # host -> the classes delivered there as one int64 array, beside the list (a traced run's only:
    # an incremental check's first look reads them all at once)
    delivered_arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rounds: int = 0
    hops: int = 0

    def key(self, x: int) -> int:
        """The packed header bits of class ``x``."""
        return interner(self.masks[x >> TAG_SHIFT])[1][x & _IDM]


def _batch(net: HsaNet, ingresses: list[Port], tags: dict[Port, int], n_tags: int | None = None,
           trace: dict[Port, list[np.ndarray]] | None = None,
           depth: dict[Port, int] | None = None) -> tuple[_Batch, list[Port]]:
    """Run the batch engine from every ingress whose port has a single-pattern index.

    ``n_tags``: how many ingress numbers there are (``ingresses`` may be some of them);
    ``trace``: when given, gets, per (switch, in_port), the arrays of classes that came in
    there (what an incremental check needs to know which ingresses a flow_mod can touch);
    ``depth``: when given with ``trace``, gets per cell the last round (hop number, the
    ingress's is 1) in which classes came in there.
    Returns its results and the ingresses it could not take (for the general engine).

    A run with the same inputs as the last one (see :func:`_batch_inputs`) returns the last
    one's results, which nobody changes: a check of an unchanged network costs a look at
    each switch instead of a step per class."""
    inputs = holder = None
    if trace is None:
        inputs = _batch_inputs(net, ingresses, tags, n_tags)
        # kept on a compiled switch of this network, so it goes when the network goes
        holder = next((cs for cs in inputs[4] if cs is not None), None)
        last = getattr(holder, "last_batch", None)
        if last is not None and _same_inputs(last[0], inputs):
            return last[1], list(last[2])
    out = _Batch(masks=[0] * (len(ingresses) if n_tags is None else n_tags))
    rest: list[Port] = []
    by_mask: dict[int, dict[Port, np.ndarray]] = {}
    acc = _Acc()
    with gc_paused():  # see gc_paused: compiling and pushing classes make no cycles
        for ing in ingresses:
            s, p = ing
            pi = net.compiled(s).port(p) if net.up(s) else None
            if pi is None or pi.ids is None:
                rest.append(ing)
                continue
            tag = tags[ing]
            mask = pi.fast_mask
            out.masks[tag] = mask  # type: ignore[assignment]  # fast_mask is set with ids
            out.ids_at[tag] = pi.key_ids()
            if pi.ids:
                xs = pi.memo.get(("ingress", tag))
                if xs is None:
                    xs = pi.memo[("ingress", tag)] = pi.arrays()[0].astype(np.int64) | (tag << TAG_SHIFT)
                by_mask.setdefault(mask, {})[ing] = xs  # type: ignore[arg-type]  # fast_mask is set with ids
        rounds = _Rounds.of(net) if trace is not None and by_mask else None
        for mask, frontier in by_mask.items():
            if rounds is not None:
                rounds.run(out, acc, mask, frontier, trace, depth)  # type: ignore[arg-type]  # (trace is set)
            else:
                _run_batch(net, out, acc, mask, frontier, trace, depth)
        acc.into(out, trace is not None)
    if holder is not None and inputs is not None:
        holder.last_batch = (_kept_inputs(inputs, holder), out, list(rest))
    return out, rest


class _Acc:
    """Where the batch engine's classes end, as chunks (numpy arrays) while it runs; turned
    into the plain lists of ints of :class:`_Batch` (what the checks read) once at the end."""

    def __init__(self) -> None:
        self.delivered: dict[str, list[np.ndarray]] = {}
        self.punted: dict[str, list[np.ndarray]] = {}
        self.filtered: dict[str, list[np.ndarray]] = {}
        self.drops: dict[tuple[str, int, int], list[np.ndarray]] = {}
        self.general: list[np.ndarray] = []

    def into(self, out: _Batch, arrays: bool = False) -> None:
        """Fill ``out``'s lists (and, with ``arrays``, its ``delivered_arrays``)."""
        for name in ("delivered", "punted", "filtered", "drops"):
            dst = getattr(out, name)
            for where, chunks in getattr(self, name).items():
                if arrays and name == "delivered":
                    arr = out.delivered_arrays[where] = chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
                    dst[where] = arr.tolist()
                else:
                    dst[where] = _flat(chunks)
        out.general = _flat(self.general)


def _flat(chunks: list[np.ndarray]) -> list[int]:
    if not chunks:
        return []
    if len(chunks) == 1:
        return chunks[0].tolist()
    return np.concatenate(chunks).tolist()


def _batch_inputs(net: HsaNet, ingresses: list[Port], tags: dict[Port, int], n_tags: int | None) -> tuple:
    """Everything the batch engine reads: the ingresses and their numbers, each switch's
    compiled form (reused, hence the same object, exactly while its table and ports are
    unchanged; None when the switch is down) and the live links."""
    names = tuple(net.switches)
    return (list(ingresses), dict(tags), n_tags, names,
            tuple(net.compiled(n) if net.up(n) else None for n in names),
            getattr(net.view, "_peers", None) or net.view.link_up)


def _kept_inputs(inputs: tuple, holder: Any) -> tuple:
    """``inputs`` as the compiled switch ``holder`` keeps them, by the ids of the compiled forms:
    the other switches' forms are kept, so their ids stay theirs, but not the holder's own (it
    is alive while anyone reads what it keeps; kept, it would make a cycle, and every network
    checked would wait for a full garbage collection to be freed)."""
    forms = inputs[4]
    return (*inputs[:4], tuple(None if cs is holder else cs for cs in forms), inputs[5], tuple(map(id, forms)))


def _same_inputs(kept: tuple, b: tuple) -> bool:
    return (kept[3] == b[3] and kept[6] == tuple(map(id, b[4])) and kept[2] == b[2]
            and kept[0] == b[0] and kept[1] == b[1] and kept[5] == b[5])


def _run_batch(net: HsaNet, out: _Batch, acc: _Acc, mask: int, frontier: dict[Port, np.ndarray],
               trace: dict[Port, list[np.ndarray]] | None = None, depth: dict[Port, int] | None = None) -> None:
    """Advance all classes of pattern ``mask`` one hop per round until they end.

    Classes travel as int64 arrays, a cell's arrivals in one array, so a cell's split is a
    few numpy passes (see :func:`_split`) instead of a dictionary probe per class.  Each
    (switch, in_port) remembers, on its compiled port index, the classes that came in last
    time and how they split; when the same classes come in again (the usual case between
    two checks) the split is reused and only the (view-dependent) destinations of its parts
    are looked up again.  Arrays are never changed after they are built.

    A traced run (an incremental check's first, which keeps no memory of the splits) moves each
    round's classes all at once instead (:class:`_Rounds`)."""
    switches = net.switches
    keys = interner(mask)[1]
    # code by key id for the port being split: filled with a port's codes, read, reset
    scratch = np.full(len(keys), _F_MISS, dtype=np.int32)
    delivered, punted, drops, general = acc.delivered, acc.punted, acc.drops, acc.general
    targets: dict[tuple[str, int], tuple[int, object]] = {}
    rounds = 0
    while frontier:
        rounds += 1
        if rounds > _FAST_ROUNDS:
            # Still moving: (almost surely) a loop.  The general engine re-traces these from
            # their ingress and reports the loop with its path.
            general.extend(frontier.values())
            break
        _record(trace, frontier, depth, rounds)
        nxt: dict[Port, list[np.ndarray]] = {}
        for cell, xs in frontier.items():
            if not len(xs):
                continue
            out.hops += len(xs)
            s, p = cell
            if not net.up(s):
                drops.setdefault((s, p, _DOWN), []).append(xs)
                continue
            pi = net.compiled(s).port(p)
            ids = pi.ids
            fm = pi.fast_mask
            # mixed patterns here, or finer than the classes (fast_mask is set whenever ids is)
            if ids is None or fm & ~mask:  # type: ignore[operator]
                general.append(xs)
                continue
            parts = _parts(pi, xs, mask, rounds, keys, scratch, trace is None)
            for code, lst in parts:
                if code >= 0:
                    t = targets.get((s, code))
                    if t is None:
                        t = targets[(s, code)] = _target(net, switches, s, code)
                    kind, where = t
                    if kind == 0:
                        nxt.setdefault(where, []).append(lst)  # type: ignore[arg-type]  # kind 0: a (switch, port)
                    elif kind == 1:
                        delivered.setdefault(where, []).append(lst)  # type: ignore[arg-type]  # kind 1: a host
                    else:
                        drops.setdefault((s, p, code), []).append(lst)
                elif code == _F_MISS or code == F_PUNT:
                    punted.setdefault(s, []).append(lst)
                elif code == F_NOTHING or code == F_DROP:  # outputs that go nowhere / a drop rule's
                    lost = drops.setdefault((s, p, code), []) if code == F_NOTHING else acc.filtered.setdefault(s, [])
                    lost.append(lst)
                else:
                    general.append(lst)
        frontier = {cell: ch[0] if len(ch) == 1 else np.concatenate(ch) for cell, ch in nxt.items()}
    out.rounds = max(out.rounds, rounds)


def _parts(pi, xs: np.ndarray, mask: int, rounds: int, keys: list[int], scratch: np.ndarray,
           keep: bool) -> list[tuple[int, np.ndarray]]:
    """:func:`_split` of classes ``xs`` arriving at port index ``pi`` in round ``rounds``, or the
    parts remembered from the last visit when the same classes came in then.  ``keep``: remember
    this split for the next check.  A traced run (an incremental check's first) does not: it
    keeps every cell's classes in its own index, and the split's parts, a copy of every class
    (40 MB at FatTree K=16), would stay on the compiled ports as long as they live, for a full
    check that may never come."""
    memo = pi.memo.get((mask, rounds))  # a cell may be visited in several rounds
    if memo is not None and _same(memo[0], xs):
        return memo[1]
    parts = _split(pi, xs, mask, keys, scratch)
    if keep:
        pi.memo[(mask, rounds)] = (xs, parts)
    elif memo is not None:
        del pi.memo[(mask, rounds)]
    return parts


# Where a class goes after a switch (a "sink", numbered in a table per (switch, fast code), see
# _Rounds): ("c", cell) a switch cell, ("d", host), ("p", switch) its controller (punted),
# ("f", switch) a drop rule (filtered), the general engine, or a blackhole (whose finding needs
# the cell and the code too).
_TO_GENERAL, _TO_DROP = ("g", None), ("x", None)
_LOWEST = F_DROP            # the lowest fast code a port index gives (F_* codes; ports are >= 0)
_MAX_SINKS = 1 << 16        # sink numbers sort as uint16 (a radix sort)
_MAX_COLUMNS = 4096         # port numbers beyond this: the cell-by-cell rounds


class _Rounds:
    """The batch engine's rounds with every cell's classes moved at once: each cell's codes (a
    scatter and a gather, :func:`_codes`), then for the whole round one table lookup (switch,
    code) -> where the class goes, one radix sort by that and one gather; each next cell's
    classes are one slice of the result (no split and no concatenation per cell).  A cell's
    split was some twenty numpy calls, and with 4,576 cells at FatTree K=16 their fixed cost,
    not the classes, was most of the run.  Classes keep their order within a source cell and
    come into a cell in the order of the round's cells, as in the cell-by-cell rounds; the
    round's cells are in the order of their numbers here, which the results do not depend on
    (every reader sorts or makes sets)."""

    __slots__ = ("net", "row", "lut", "sinks", "cells")

    def __init__(self, net: HsaNet, top: int) -> None:
        self.net = net
        names = list(net.switches)
        self.row = {n: i for i, n in enumerate(names)}
        table = [[_sink(net, n, c) for c in range(_LOWEST, top + 1)] for n in names]
        seen = dict.fromkeys(k for r in table for k in r)  # (in the order first met)
        # switch cells first: the classes of a round bound for a cell are then the start of the
        # round's sorted classes, and the next round reads them as they are (see _round)
        self.sinks = [k for k in seen if k[0] == "c"] + [k for k in seen if k[0] != "c"]
        self.cells = sum(1 for k in seen if k[0] == "c")
        num = {k: i for i, k in enumerate(self.sinks)}
        self.lut = np.array([[num[k] for k in r] for r in table], dtype=np.uint16).reshape(len(names), -1)

    @staticmethod
    def of(net: HsaNet) -> _Rounds | None:
        """The rounds for ``net``'s switches and links, or None when its port numbers or sinks
        are too many for a table."""
        top = 0
        for sw in net.switches.values():
            ports = getattr(sw, "ports", None)
            if ports:
                top = max(top, max(ports))
        if top >= _MAX_COLUMNS:
            return None
        r = _Rounds(net, top)
        return r if len(r.sinks) <= _MAX_SINKS else None

    def run(self, out: _Batch, acc: _Acc, mask: int, frontier: dict[Port, np.ndarray],
            trace: dict[Port, list[np.ndarray]], depth: dict[Port, int] | None) -> None:
        """:func:`_run_batch` of classes of pattern ``mask`` from ``frontier``, traced."""
        keys = interner(mask)[1]
        scratch = np.full(len(keys), _F_MISS, dtype=np.int32)
        rounds = 0
        joined = None
        while frontier:
            rounds += 1
            if rounds > _FAST_ROUNDS:  # (see _run_batch)
                acc.general.extend(frontier.values())
                break
            _record(trace, frontier, depth, rounds)
            frontier, joined = self._round(out, acc, mask, keys, scratch, frontier, joined)
        out.rounds = max(out.rounds, rounds)

    def _round(self, out: _Batch, acc: _Acc, mask: int, keys: list[int], scratch: np.ndarray,
               frontier: dict[Port, np.ndarray],
               joined: np.ndarray | None) -> tuple[dict[Port, np.ndarray], np.ndarray | None]:
        """One hop of every class of ``frontier``: the next round's frontier, and its classes in
        one array (``joined``: this round's, when the last round made it)."""
        net = self.net
        xparts: list[np.ndarray] = []
        gparts: list[np.ndarray] = []
        cells: list[Port] = []
        lens: list[int] = []
        for cell, xs in frontier.items():
            n = len(xs)
            if not n:
                continue
            out.hops += n
            s, p = cell
            if not net.up(s):
                acc.drops.setdefault((s, p, _DOWN), []).append(xs)
                joined = None
                continue
            pi = net.compiled(s).port(p)
            if pi.ids is None or pi.fast_mask & ~mask:  # type: ignore[operator]  # (see _run_batch)
                acc.general.append(xs)
                joined = None
                continue
            got = _codes(pi, xs, mask, scratch)
            if got is None:
                joined = None  # (the cell's classes come regrouped)
                parts = _split(pi, xs, mask, keys, scratch)
                xs = parts[0][1] if len(parts) == 1 else np.concatenate([ys for _c, ys in parts])
                got = np.repeat(np.array([c for c, _ys in parts], dtype=np.int32), [len(ys) for _c, ys in parts])
            xparts.append(xs)
            gparts.append(got)
            cells.append(cell)
            lens.append(n)
        if not cells:
            return {}, None
        if joined is not None:  # (every cell's classes, in the frontier's order: already one array)
            xs = joined
        else:
            xs = xparts[0] if len(xparts) == 1 else np.concatenate(xparts)
        got = gparts[0] if len(gparts) == 1 else np.concatenate(gparts)
        # each class's place in the table (int32: 4 bytes a class, one pass to add its code)
        row, width = self.row, self.lut.shape[1]
        at = np.repeat(np.array([row[c[0]] * width - _LOWEST for c in cells], dtype=np.int32), lens)
        at += got
        if int(got.min()) < _LOWEST or int(got.max()) >= width + _LOWEST:
            # (codes no port index gives: the general engine, as in _run_batch)
            bad = (got < _LOWEST) | (got >= width + _LOWEST)
            at[bad] += F_COMPLEX - got[bad]
        to = self.lut.ravel()[at]
        order = np.argsort(to, kind="stable")
        to = to[order]
        ys = xs[order]
        n = len(ys)
        cuts = (np.flatnonzero(to[1:] != to[:-1]) + 1).tolist()
        starts = [0, *cuts]
        nxt: dict[Port, np.ndarray] = {}
        sinks, ncells = self.sinks, self.cells
        end = 0
        for sink, a, b in zip(to[starts].tolist(), starts, [*cuts, n], strict=True):
            kind, where = sinks[sink]
            part = ys[a:b]
            if sink < ncells:
                nxt[where] = part
                end = b
            elif kind == "d":
                acc.delivered.setdefault(where, []).append(part)
            elif kind == "p":
                acc.punted.setdefault(where, []).append(part)
            elif kind == "f":
                acc.filtered.setdefault(where, []).append(part)
            elif kind == "g":
                acc.general.append(part)
            else:
                self._drops(acc, part, np.repeat(np.arange(len(cells)), lens)[order[a:b]], got[order[a:b]], cells)
        return nxt, ys[:end]

    @staticmethod
    def _drops(acc: _Acc, xs: np.ndarray, where: np.ndarray, codes: np.ndarray, cells: list[Port]) -> None:
        """Classes ``xs`` that go nowhere (from cell number ``where`` with code ``codes``, each):
        a blackhole per (switch, in_port, code), in their order."""
        by: dict[tuple[str, int, int], list[int]] = {}
        for x, i, c in zip(xs.tolist(), where.tolist(), codes.tolist(), strict=True):
            s, p = cells[i]
            by.setdefault((s, p, c), []).append(x)
        for k, lst in by.items():
            acc.drops.setdefault(k, []).append(np.array(lst, dtype=np.int64))


def _sink(net: HsaNet, s: str, code: int) -> tuple[str, object]:
    """Where classes with fast code ``code`` at switch ``s`` go (see :class:`_Rounds`)."""
    if code >= 0:
        kind, where = _target(net, net.switches, s, code)
        return _TO_DROP if kind == 2 else ("c" if kind == 0 else "d", where)
    if code == _F_MISS or code == F_PUNT:
        return ("p", s)
    if code == F_DROP:
        return ("f", s)
    return _TO_DROP if code == F_NOTHING else _TO_GENERAL


def _target(net: HsaNet, switches: Collection[str], s: str, code: int) -> tuple[int, object]:
    """Where output port ``code`` of switch ``s`` leads: (0, (switch, port)) on to a switch,
    (1, host) delivered, (2, None) dropped (no live link)."""
    peer = net.peer(s, code)
    if peer is None:
        return (2, None)
    if peer[0] in switches:
        return (0, peer)
    return (1, peer[0])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two class arrays are equal (numpy's own comparison costs microseconds of
    call overhead: small arrays, the incremental check's usual case, compare as lists)."""
    if a is b:
        return True
    if len(a) != len(b):
        return False
    if len(a) < 256:
        return a.tolist() == b.tolist()
    return bool(np.array_equal(a, b))


# A cell's split is vectorized when its classes are at least this share of its port's
# entries (it then costs a pass over the port's entries too); fewer classes (the
# incremental check's few ingresses) are looked up one by one.
_VECTOR_MIN = 32
_VECTOR_RATIO = 16


def _split(pi, xs: np.ndarray, mask: int, keys: list[int], scratch: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Classes ``xs`` (of pattern ``mask``) arriving at port index ``pi``, by fast code
    (parts in ascending code order, each keeping the classes' order)."""
    got = _codes(pi, xs, mask, scratch)
    if got is None:
        return [(c, np.array(lst, dtype=np.int64)) for c, lst in sorted(_split_each(pi, xs.tolist(), mask, keys))]
    n = len(xs)
    lo, hi = int(got.min()), int(got.max())
    if lo == hi:
        return [(lo, xs)]
    if -32768 <= lo and hi < 32768:  # codes are ports and small negatives: a 16-bit key sorts by radix
        got = got.astype(np.int16)
    order = np.argsort(got, kind="stable")
    got = got[order]
    cuts = (np.flatnonzero(got[1:] != got[:-1]) + 1).tolist()
    ys = xs[order]
    return [(int(got[a]), ys[a:b]) for a, b in zip([0, *cuts], [*cuts, n], strict=True)]


def _codes(pi, xs: np.ndarray, mask: int, scratch: np.ndarray) -> np.ndarray | None:
    """The fast code of each of classes ``xs`` (of pattern ``mask``) at port index ``pi``, as an
    int32 array, or None where they are better looked up one by one (:func:`_split_each`)."""
    fm = pi.fast_mask
    n = len(xs)
    ids = pi.ids
    if fm != mask:
        got = None
    elif n >= _VECTOR_MIN and n * _VECTOR_RATIO >= len(ids):
        kids, codes = pi.arrays()
        if pi.memo.get(("ingress", int(xs[0]) >> TAG_SHIFT)) is xs:
            # an ingress's own classes (see _batch): its port's key ids, in their order
            got = codes
        else:
            # many classes: scatter the port's codes by key id, gather the classes'
            scratch[kids] = codes
            got = scratch[xs & _IDM]
            scratch[kids] = _F_MISS
    elif pi.act is not None and isinstance(ids, SlotMap) and len(ids) >= SlotMap.COMPACT_MIN:
        # a few classes at a big port: binary search in the table's sorted key ids
        kids, codes = pi.arrays()
        q = (xs & _IDM).astype(np.int32)
        pos = np.minimum(np.searchsorted(kids, q), len(kids) - 1)
        got = np.where(kids[pos] == q, codes[pos], _F_MISS)
    else:
        got = None
    return got


def _split_each(pi, xs: list[int], mask: int, keys: list[int]) -> list[tuple[int, list[int]]]:
    """:func:`_split` one class at a time (few classes, or classes finer than the port)."""
    ids, fm, act = pi.ids, pi.fast_mask, pi.act
    get = ids.get
    if fm == mask and act is not None:  # ids: key id -> the table's slot (see PortIndex)
        cba = pi.code_by_act
        by_act: dict[int, list[int]] = {a: [] for a in cba}
        by_act[MISS_ACTIONS] = []  # slot 0's action-list id: no entry
        idm = _IDM
        for x in xs:
            by_act[act[get(x & idm, 0)]].append(x)
        out: dict[int, list[int]] = {}
        for a, lst in by_act.items():
            if lst:
                c = cba.get(a, _F_MISS)
                cur = out.get(c)
                if cur is None:
                    out[c] = lst
                else:
                    cur.extend(lst)
        return list(out.items())
    local: dict[int, list[int]] = {c: [] for c in pi.codes()}
    local[_F_MISS] = []
    if fm == mask:
        for x in xs:
            local[get(x & _IDM, _F_MISS)].append(x)
    else:  # the classes fix more bits than this port's pattern: project them
        kc = pi.key_code().get
        for x in xs:
            local[kc(keys[x & _IDM] & fm, _F_MISS)].append(x)
    return [(c, lst) for c, lst in local.items() if lst]


def _record(trace: dict[Port, list[np.ndarray]] | None, frontier: dict[Port, np.ndarray],
            depth: dict[Port, int] | None = None, rounds: int = 0) -> None:
    """Note the classes coming in at each cell of this round (kept as arrays: they are never
    changed), and in ``depth`` the round, the latest one at each cell."""
    if trace is None:
        return
    for cell, xs in frontier.items():
        seen = trace.get(cell)
        if seen is None:
            trace[cell] = [xs]
        else:
            seen.append(xs)
        if depth is not None and depth.get(cell, 0) < rounds:  # (one run per class pattern)
            depth[cell] = rounds
