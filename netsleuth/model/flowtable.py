"""An OpenFlow 1.0 flow table: the semantics controllers are tested against.

Controllers' bugs hide in the corners of flow_mod semantics (identical-match
replacement, strict vs non-strict, out_port filters, exact-match precedence,
timeouts), so this table implements those corners as the 1.0 specification
states them, and says plainly where it had to choose:

* Ties.  Overlapping entries of equal priority are undefined in 1.0; here
  the entry that comes first in :meth:`FlowTable.entries` order wins: exact
  entries first, then higher priority, then the more specific match (more
  matched bits), then :meth:`Match.sort_key`.  The rule depends only on the
  table's contents, never on install order, so two tables with equal
  :meth:`FlowTable.canonical_key` forward identically (the model checker
  relies on this).
* MODIFY changes the actions and, as 1.0 specifies (and OVS documents), the
  cookie of every entry it selects; counters, timeouts, flags and the
  install time stay.  (OVS also restarts the hard timeout on modify; the
  specification counts it from installation, and so does this table.)
  When nothing is selected MODIFY returns ``[]`` and the caller performs the
  ADD, because only the caller holds the flow_mod's timeouts and flags.
* out_port filtering accepts Output and Enqueue actions to the port (OVS
  treats an enqueue as an output to its port).
* Time is whatever ``now`` the caller passes (an injected clock).  An entry
  expires when ``now >= deadline``; :meth:`lookup` never expires anything by
  itself, because expiry is an event the core must schedule and record.

Storage.  A network of millions of rules cannot afford Python objects per
rule, so the table stores its entries in columns, grouped by in_port (or
wildcarded in_port) and wildcard pattern (:class:`PatternIndex`): the
match's header bits packed and interned process-wide as header-space
analysis packs them (an int key id), a map key id -> slot (:class:`SlotMap`: a
dict while small, sorted int32 arrays once big), and per slot an
array of priorities, action-list ids (equal action lists share one id),
install times and serials, with sparse dicts for the fields that are almost
always default (cookie, timeouts, flags, last use, counters).  About 80
bytes per rule (FatTree K=12, interned keys included) instead of about 850 for objects.  :class:`FlowEntry` objects
are snapshots made when asked for (:meth:`FlowTable.entries`, lookups, stats);
changing one changes nothing (they are frozen): every change goes through the
table, and ``FlowEntry.serial`` says which installation a snapshot shows.
The same groups are header-space analysis' index of the table
(:meth:`FlowTable.pattern_index`), so the first invariant check of a network
with millions of rules need not sort and pack them all.

Lookup is the hot path (model checking, thousand-switch networks): the
groups a packet's in_port can hit, exact ones first then by descending
maximum priority, one dict probe each, stopping as soon as no remaining group
can win.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

# numpy holds a big pattern's key id -> slot map as two sorted int32 arrays (see SlotMap):
# 8 bytes per entry where a dict costs about 40, and header-space analysis reads them whole.
import numpy as np
import numpy.typing as npt
from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.errors import NetsleuthError
from netsleuth.model.actions import Action, Enqueue, Output, action_from_json, action_key, action_to_json
from netsleuth.model.headerbits import intern_new, interner, pack, packer, small_int, unpacker
from netsleuth.model.match import Match

OFPP_NONE = ofp.OFPP_NONE
OFPFW_IN_PORT = ofp.OFPFW_IN_PORT
_INF = float("inf")
_and = operator.and_


class FlowTableError(NetsleuthError):
    """A flow_mod the table refuses; ``err_type``/``err_code`` say which OpenFlow ERROR to reply with."""

    err_type = ofp.OFPET_FLOW_MOD_FAILED
    err_code = ofp.OFPFMFC_UNSUPPORTED


class FlowOverlapError(FlowTableError):
    """ADD with OFPFF_CHECK_OVERLAP hit an overlapping entry of the same priority."""

    err_code = ofp.OFPFMFC_OVERLAP

    def __init__(self, match: Match, priority: int, existing: FlowEntry) -> None:
        super().__init__(
            f"flow priority={priority},{match} overlaps installed flow {existing}",
            "give the new flow a different priority or a disjoint match, or drop OFPFF_CHECK_OVERLAP")
        self.existing = existing


@dataclass(frozen=True, slots=True)
class FlowEntry:
    """One installed flow as the table had it when asked (a snapshot: the table keeps its
    entries in columns, see :class:`PatternIndex`, and changes them only through its own
    methods).  Identity is (match, priority)."""

    match: Match
    priority: int
    actions: tuple[Action, ...]
    cookie: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0
    flags: int = 0
    installed_at: float = 0.0
    last_used: float = 0.0
    packet_count: int = 0
    byte_count: int = 0
    # Which installation this is: an ADD (also one replacing an identical entry) makes a new
    # serial, MODIFY and traffic keep it.  Snapshots of one installed entry share it, so
    # provenance tools can follow an entry without object identity.  Not part of equality.
    serial: int = field(default=0, compare=False)

    def rank(self) -> tuple[Any, ...]:
        """Position in canonical order; smaller wins a lookup."""
        return (0 if self.match.wildcards == 0 else 1, -self.priority, self.match.sort_key())

    def deadline(self) -> float | None:
        """When this entry expires if it sees no more traffic (None: never)."""
        d = min(self._idle_deadline(), self._hard_deadline())
        return None if d == _INF else d

    def expiry_reason(self, now: float) -> int | None:
        """OFPRR_HARD_TIMEOUT / OFPRR_IDLE_TIMEOUT if expired at ``now``; the earlier deadline
        decides (hard on a tie)."""
        idle, hard = self._idle_deadline(), self._hard_deadline()
        if min(idle, hard) > now:
            return None
        # os-ken's constants are untyped ints
        return ofp.OFPRR_HARD_TIMEOUT if hard <= idle else ofp.OFPRR_IDLE_TIMEOUT  # type: ignore[no-any-return]

    def _idle_deadline(self) -> float:
        return self.last_used + self.idle_timeout if self.idle_timeout else _INF

    def _hard_deadline(self) -> float:
        return self.installed_at + self.hard_timeout if self.hard_timeout else _INF

    def has_output(self, port: int) -> bool:
        """Whether an Output or Enqueue action sends to ``port`` (the out_port filter)."""
        return any(isinstance(a, (Output, Enqueue)) and a.port == port for a in self.actions)

    def duration(self, now: float) -> float:
        return max(0.0, now - self.installed_at)

    def key(self, with_counters: bool = True) -> tuple[Any, ...]:
        """Everything that makes this entry behave as it does, as plain ints and floats."""
        m = self.match
        base = (m.wildcards, m.values, self.priority, tuple(action_key(a) for a in self.actions),
                self.cookie, self.idle_timeout, self.hard_timeout, self.flags, self.installed_at, self.last_used)
        if with_counters:
            return base + (self.packet_count, self.byte_count)
        return base

    def copy(self) -> FlowEntry:
        return FlowEntry(self.match, self.priority, self.actions, self.cookie, self.idle_timeout,
                         self.hard_timeout, self.flags, self.installed_at, self.last_used,
                         self.packet_count, self.byte_count)

    def to_json(self) -> dict[str, Any]:
        return {"match": self.match.to_json(), "priority": self.priority,
                "actions": [action_to_json(a) for a in self.actions], "cookie": self.cookie,
                "idle_timeout": self.idle_timeout, "hard_timeout": self.hard_timeout, "flags": self.flags,
                "installed_at": self.installed_at, "last_used": self.last_used,
                "packet_count": self.packet_count, "byte_count": self.byte_count}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FlowEntry:
        try:
            return cls(Match.from_json(d["match"]), d["priority"],
                       tuple(action_from_json(a) for a in d["actions"]), d["cookie"], d["idle_timeout"],
                       d["hard_timeout"], d["flags"], d["installed_at"], d["last_used"],
                       d["packet_count"], d["byte_count"])
        except (KeyError, TypeError) as exc:
            raise FlowTableError(f"bad flow entry JSON: missing or malformed {exc}",
                                 "produce it with FlowEntry.to_json()") from None

    def __str__(self) -> str:
        """ovs-ofctl dump-flows style."""
        parts = [f"cookie={self.cookie:#x}", f"n_packets={self.packet_count}", f"n_bytes={self.byte_count}"]
        if self.idle_timeout:
            parts.append(f"idle_timeout={self.idle_timeout}")
        if self.hard_timeout:
            parts.append(f"hard_timeout={self.hard_timeout}")
        match = str(self.match)
        head = f"priority={self.priority}" + (f",{match}" if match else "")
        acts = ",".join(str(a) for a in self.actions) or "drop"
        return ", ".join(parts) + f", {head} actions={acts}"


# --------------------------------------------------------------------------- storage
# Every distinct action list gets a small process-wide id; the tables store ids (4 bytes
# per entry) and a compiler works out what each list does once per (switch, port, list).
_ACTS: list[tuple[Action, ...]] = []
_ACT_IDS: dict[tuple[Action, ...], int] = {}


MATCH_CACHE_MAX = 256  # a PatternIndex keeps the Match objects it made while it has at most this many slots
MISS_ACTIONS = 0xFFFFFFFF  # the action-list id of a PatternIndex's slot 0 (no entry)


def action_id(actions: tuple[Action, ...]) -> int:
    """The interned id of an action list (equal lists share one id)."""
    a = _ACT_IDS.get(actions)
    if a is None:
        a = _ACT_IDS[actions] = len(_ACTS)
        _ACTS.append(actions)
    return a


def actions_of(aid: int) -> tuple[Action, ...]:
    """The action list with interned id ``aid``."""
    return _ACTS[aid]


I32 = npt.NDArray[np.int32]
_NONE_I32: I32 = np.zeros(0, dtype=np.int32)


class SlotMap:
    """key id -> slot of one :class:`PatternIndex` (the entry that wins at that key).

    A plain dict while small (tables a model checker or a controller under test builds:
    lookups stay one dict probe).  Past :attr:`COMPACT_MIN` entries most of the map moves
    into two int32 arrays sorted by key id (``keys``, ``slots``), with recent additions in
    a dict until it holds 1/16 of the arrays' size, when both are merged again (so an
    addition costs O(1) amortized C work).  A removed array entry keeps its key with slot -1 until
    the next merge.  At FatTree scale (tens of millions of rules) this is 8 bytes per entry
    instead of about 40, and header-space analysis takes the arrays as they are.

    Iteration order (arrays by key id, then the dict by insertion) depends only on the
    operations done, never on hashing of anything but the key ids themselves."""

    COMPACT_MIN = 256
    DICT_SHARE = 16  # merge when the dict holds 1/DICT_SHARE of the arrays' entries

    __slots__ = ("_d", "_k", "_s", "_n", "_dead", "_hi")

    def __init__(self) -> None:
        self._d: dict[int, int] = {}
        self._k: I32 = _NONE_I32   # key ids, ascending
        self._s: I32 = _NONE_I32   # their slots (-1: removed)
        self._n = 0                # live entries in the arrays
        self._dead = 0             # removed entries still in the arrays
        self._hi = -1              # the largest key id in the arrays (-1: none)

    def _find(self, kid: int) -> int:
        """Index of ``kid`` in the arrays, or -1."""
        if kid > self._hi:  # key ids are handed out in order: new keys are usually past the end
            return -1
        k = self._k
        i = int(k.searchsorted(kid))
        return i if i < len(k) and k[i] == kid else -1

    def get(self, kid: int, default: int | None = None) -> int | None:
        s = self._d.get(kid)
        if s is not None:
            return s
        if self._n:
            i = self._find(kid)
            if i >= 0:
                v = int(self._s[i])
                if v >= 0:
                    return v
        return default

    def __getitem__(self, kid: int) -> int:
        s = self.get(kid)
        if s is None:
            raise KeyError(kid)
        return s

    def __contains__(self, kid: object) -> bool:
        return isinstance(kid, int) and self.get(kid) is not None

    def __setitem__(self, kid: int, s: int) -> None:
        if kid <= self._hi and kid not in self._d:
            i = self._find(kid)
            if i >= 0:
                if self._s[i] < 0:
                    self._n += 1
                    self._dead -= 1
                self._s[i] = s
                return
        self._d[kid] = s
        nd = len(self._d)
        if nd >= self.COMPACT_MIN or (self._n and nd >= 16 and nd * self.DICT_SHARE >= self._n):
            self.compact()

    def __delitem__(self, kid: int) -> None:
        if self._d.pop(kid, None) is not None:
            return
        i = self._find(kid)
        if i < 0 or self._s[i] < 0:
            raise KeyError(kid)
        self._s[i] = -1
        self._n -= 1
        self._dead += 1
        if self._dead > self.COMPACT_MIN and self._dead * 4 > self._n:
            self.compact()

    def __len__(self) -> int:
        return self._n + len(self._d)

    def __iter__(self) -> Iterator[int]:
        return iter(self.keys())

    def compact(self) -> None:
        """Move every entry into the sorted arrays (none removed left in them)."""
        d = self._d
        k, s = self._k, self._s
        if self._dead:
            live = s >= 0
            k, s = k[live], s[live]
        if d:
            k = np.concatenate((k, np.fromiter(d.keys(), dtype=np.int32, count=len(d))))
            s = np.concatenate((s, np.fromiter(d.values(), dtype=np.int32, count=len(d))))
            order = np.argsort(k, kind="stable")
            k, s = k[order], s[order]
        self._k, self._s, self._n, self._dead, self._d = k, s, len(k), 0, {}
        self._hi = int(k[-1]) if len(k) else -1

    def arrays(self) -> tuple[I32, I32]:
        """(key ids ascending, their slots): every entry, as the map's own arrays (after
        :meth:`compact`; read-only for callers).  A small map stays a dict and gives copies."""
        d = self._d
        if not len(self._k) and len(d) < self.COMPACT_MIN:
            return (np.fromiter(d.keys(), dtype=np.int32, count=len(d)),
                    np.fromiter(d.values(), dtype=np.int32, count=len(d)))
        if d or self._dead:
            self.compact()
        return self._k, self._s

    def keys(self) -> list[int]:
        k = self._k
        out: list[int] = (k if not self._dead else k[self._s >= 0]).tolist()
        out.extend(self._d)
        return out

    def values(self) -> list[int]:
        s = self._s
        out: list[int] = (s if not self._dead else s[s >= 0]).tolist()
        out.extend(self._d.values())
        return out

    def items(self) -> Iterator[tuple[int, int]]:
        return zip(self.keys(), self.values(), strict=True)

    def copy(self) -> SlotMap:
        c = SlotMap()
        c._d = dict(self._d)
        c._k, c._s = self._k, self._s.copy()  # key ids never change in place
        c._n, c._dead, c._hi = self._n, self._dead, self._hi
        return c


class PatternIndex:
    """The entries of one table sharing one in_port (or all wildcarding it) and one
    wildcards pattern: where those entries live.

    A table of millions of rules cannot afford a Python object per rule, so an entry is a
    *slot*: a row of columnar arrays (priority, action-list id, install time, serial, the
    match's interned key id) plus sparse dicts for what is almost always default (cookie,
    timeouts, flags, last use, counters).  Its match is the pattern's wildcards, the in_port and the
    header bits packed as header-space analysis packs them (:mod:`netsleuth.model.headerbits`),
    interned process-wide per pattern so every table and compiled switch agrees on the ids.

    ``slot`` maps each key id to the slot of the entry that wins there (the highest
    priority); the rare keys with entries at several priorities keep all their slots,
    priority descending, in ``multi``.  ``act_count`` counts winners per action-list id,
    so a compiler can give every key its outcome with one pass per distinct action list.
    :class:`FlowEntry` objects are made from a slot only when asked for."""

    __slots__ = ("in_port", "wildcards", "masks", "mask", "bits", "exact", "packer", "unpack", "intern", "keys",
                 "slot", "multi", "kid", "prio", "act", "cookie", "installed", "serial", "idle", "hard", "flags",
                 "used", "counts", "free", "prios", "top", "act_count", "mcache")

    def __init__(self, in_port: int | None, wildcards: int, masks: tuple[int, ...]) -> None:
        self.in_port = in_port
        self.wildcards = wildcards
        self.masks = masks
        self.mask = pack(masks)
        self.bits = sum(m.bit_count() for m in masks)
        self.exact = wildcards == 0
        self.packer = packer(masks)
        self.unpack = unpacker(masks)
        self.intern, self.keys = interner(self.mask)
        self.slot = SlotMap()                   # key id -> winning slot
        self.multi: dict[int, list[int]] = {}   # key id -> every slot with that match, priority descending
        # Slot 0 is never an entry: its action-list id is MISS_ACTIONS, so a reader can look
        # a key's action list up as act[slot.get(key, 0)] with no test for a miss.
        self.kid = array("i", [-1])             # slot -> key id (-1: not an entry)
        self.prio = array("H", [0])
        self.act = array("I", [MISS_ACTIONS])   # slot -> action-list id (see action_id)
        self.cookie: dict[int, int] = {}        # slot -> cookie, when not 0
        self.installed = array("d", [0.0])
        self.serial = array("I", [0])           # slot -> FlowEntry.serial (widened past 2**32)
        self.idle: dict[int, int] = {}          # slot -> idle timeout, when not 0
        self.hard: dict[int, int] = {}
        self.flags: dict[int, int] = {}
        self.used: dict[int, float] = {}        # slot -> last use, when it differs from installed
        self.counts: dict[int, tuple[int, int]] = {}  # slot -> (packets, bytes), when not zero
        self.free: list[int] = []
        self.prios: dict[int, int] = {}         # priority -> entries at it
        self.top = -1                           # the highest priority here
        self.act_count: dict[int, int] = {}     # action-list id -> winning slots with it
        self.mcache: dict[int, Match] | None = {}  # key id -> its Match, while the pattern is small

    # ------------------------------------------------------------ reading
    def key_id(self, values: tuple[int, ...]) -> int | None:
        """The interned id of a match's (masked) values here, None if never interned."""
        return self.intern.get(self.packer(values))

    def slots_of(self, kid: int) -> list[int]:
        """Every slot with key ``kid``, priority descending."""
        lst = self.multi.get(kid)
        if lst is not None:
            return lst
        s = self.slot.get(kid)
        return [] if s is None else [s]

    def live(self) -> Iterator[int]:
        """Every occupied slot."""
        for s, k in enumerate(self.kid):
            if k >= 0:
                yield s

    def __len__(self) -> int:
        return len(self.kid) - len(self.free) - 1

    def match_of(self, kid: int) -> Match:
        """The match of key ``kid`` here.  Small patterns (model checking asks for every
        entry at every state) keep the matches they made; big ones make them on request."""
        mc = self.mcache
        if mc is not None:
            m = mc.get(kid)
            if m is not None:
                return m
        m = Match(self.wildcards, self.in_port or 0, *self.unpack(self.keys[kid]))
        if mc is not None:
            if len(self.kid) > MATCH_CACHE_MAX:
                self.mcache = None
            else:
                mc[kid] = m
        return m

    def actions(self, s: int) -> tuple[Action, ...]:
        return _ACTS[self.act[s]]

    def entry(self, s: int, match: Match | None = None) -> FlowEntry:
        """Slot ``s`` as a :class:`FlowEntry` (a snapshot: changing the table does not change it)."""
        pkts, nbytes = self.counts.get(s, (0, 0))
        inst = self.installed[s]
        return FlowEntry(self.match_of(self.kid[s]) if match is None else match, self.prio[s], _ACTS[self.act[s]],
                         self.cookie.get(s, 0), self.idle.get(s, 0), self.hard.get(s, 0), self.flags.get(s, 0), inst,
                         self.used.get(s, inst), pkts, nbytes, self.serial[s])

    def winner(self, kid: int) -> FlowEntry | None:
        """The entry that wins at key ``kid``, or None."""
        s = self.slot.get(kid)
        return None if s is None else self.entry(s)

    def deadline(self, s: int) -> tuple[float, float]:
        """(idle, hard) deadlines of slot ``s`` (inf: none)."""
        idle, hard = self.idle.get(s, 0), self.hard.get(s, 0)
        inst = self.installed[s]
        return (self.used.get(s, inst) + idle if idle else _INF, inst + hard if hard else _INF)

    # ------------------------------------------------------------ writing (by FlowTable only)
    def put(self, kid: int, priority: int, aid: int, cookie: int, idle: int, hard: int, flags: int,
            installed: float, serial: int) -> tuple[int, bool]:
        """Store a new entry (no entry with this key and priority may exist); (slot, whether
        the top priority here rose)."""
        if serial > 0xFFFFFFFF and self.serial.typecode == "I":  # widen the column once
            self.serial = array("Q", self.serial)
        if self.free:
            s = self.free.pop()
            self.kid[s], self.prio[s], self.act[s], self.installed[s], self.serial[s] = \
                kid, priority, aid, installed, serial
        else:
            s = small_int(len(self.kid))
            self.kid.append(kid)
            self.prio.append(priority)
            self.act.append(aid)
            self.installed.append(installed)
            self.serial.append(serial)
        if cookie:
            self.cookie[s] = cookie
        if idle:
            self.idle[s] = idle
        if hard:
            self.hard[s] = hard
        if flags:
            self.flags[s] = flags
        w = self.slot.get(kid)
        if w is None:
            self.slot[kid] = s
            self._count(aid, 1)
        else:
            lst = self.multi.get(kid)
            if lst is None:
                lst = self.multi[kid] = [w]
            prio = self.prio
            i = 0
            while i < len(lst) and prio[lst[i]] > priority:
                i += 1
            lst.insert(i, s)
            if i == 0:
                self.slot[kid] = s
                self._count(self.act[w], -1)
                self._count(aid, 1)
        self.prios[priority] = self.prios.get(priority, 0) + 1
        if priority > self.top:
            self.top = priority
            return s, True
        return s, False

    def drop(self, s: int) -> bool:
        """Remove slot ``s``; whether the top priority here fell."""
        kid = self.kid[s]
        lst = self.multi.get(kid)
        if lst is None:
            del self.slot[kid]
            self._count(self.act[s], -1)
        else:
            first = lst[0] == s
            lst.remove(s)
            if first:
                self.slot[kid] = lst[0]
                self._count(self.act[s], -1)
                self._count(self.act[lst[0]], 1)
            if len(lst) == 1:
                del self.multi[kid]
        for d in (self.cookie, self.idle, self.hard, self.flags, self.used, self.counts):
            d.pop(s, None)
        self.kid[s] = -1
        self.free.append(s)
        priority = self.prio[s]
        n = self.prios[priority] - 1
        if n:
            self.prios[priority] = n
            return False
        del self.prios[priority]
        if priority == self.top:
            self.top = max(self.prios, default=-1)
            return True
        return False

    def set_actions(self, s: int, aid: int) -> None:
        old = self.act[s]
        if old == aid:
            return
        self.act[s] = aid
        if self.slot.get(self.kid[s]) == s:
            self._count(old, -1)
            self._count(aid, 1)

    def _count(self, aid: int, d: int) -> None:
        n = self.act_count.get(aid, 0) + d
        if n:
            self.act_count[aid] = n
        else:
            del self.act_count[aid]

    def clone(self) -> PatternIndex:
        c = PatternIndex.__new__(PatternIndex)
        for name in ("in_port", "wildcards", "masks", "mask", "bits", "exact", "packer", "unpack", "intern",
                     "keys", "top"):
            setattr(c, name, getattr(self, name))
        c.slot = self.slot.copy()
        for name in ("cookie", "idle", "hard", "flags", "used", "counts", "prios", "act_count"):
            setattr(c, name, dict(getattr(self, name)))
        for name in ("kid", "prio", "act", "installed", "serial", "free"):
            setattr(c, name, getattr(self, name)[:])
        c.multi = {k: list(v) for k, v in self.multi.items()}
        c.mcache = None if self.mcache is None else dict(self.mcache)
        return c


Handle = tuple[PatternIndex, int]


def _rank_of(h: Handle) -> tuple[Any, ...]:
    pat, s = h
    return (0 if pat.exact else 1, -pat.prio[s], -pat.bits, pat.wildcards, pat.in_port or 0, pat.keys[pat.kid[s]])


class FlowTable:
    """A single OpenFlow 1.0 flow table (see the module docstring for the rules)."""

    __slots__ = ("_hs", "_n", "_order", "_sorted", "_serial", "version")

    # Tables up to this size keep their materialized, sorted entries between changes
    # (model checking asks for them at every state); bigger ones make them on request.
    SORTED_CACHE_MAX = 4096

    def __init__(self) -> None:
        # Bumped by every change of entries or actions (not counters): lets analyses
        # cache per table and tell "unchanged" in O(1) (see invariants/headerspace/compiled.py).
        self.version = 0
        # in_port (None: wildcarded) -> pattern (wildcards with OFPFW_IN_PORT) -> PatternIndex:
        # the entries themselves (see PatternIndex), grouped as header-space analysis wants them.
        self._hs: dict[int | None, dict[int, PatternIndex]] = {}
        self._n = 0
        self._order: dict[int, list[PatternIndex]] = {}  # in_port -> the patterns a lookup visits, in order
        self._sorted: list[FlowEntry] | None = None
        self._serial = 0  # the last FlowEntry.serial given out

    # ------------------------------------------------------------ flow_mod
    def add(self, match: Match, priority: int, actions: Iterable[Action], *, cookie: int = 0,
            idle_timeout: int = 0, hard_timeout: int = 0, flags: int = 0, now: float = 0.0) -> FlowEntry | None:
        """OFPFC_ADD.  Returns the entry with identical match and priority it replaced
        (whose counters are thereby discarded), or None."""
        for name, value in (("priority", priority), ("idle_timeout", idle_timeout), ("hard_timeout", hard_timeout)):
            if not isinstance(value, int) or not 0 <= value <= 0xFFFF:
                raise FlowTableError(f"flow {name}={value!r} is out of range", f"give {name} as an int in 0..65535")
        if flags & ofp.OFPFF_CHECK_OVERLAP:
            clashes = [e for e in self._all() if e.priority == priority and e.match.overlaps(match)]
            if clashes:
                raise FlowOverlapError(match, priority, min(clashes, key=FlowEntry.rank))
        pat, kid, old = self._claim(match, priority, want_old=True)
        self._put(pat, kid, priority, action_id(tuple(actions)), cookie, idle_timeout, hard_timeout, flags, now)
        return old

    def _claim(self, match: Match, priority: int, want_old: bool) -> tuple[PatternIndex, int, FlowEntry | None]:
        """Where an ADD of (``match``, ``priority``) goes: its pattern index and key id, with
        the entry of identical match and priority removed (returned when ``want_old``)."""
        pat = self._pattern(match, create=True)
        assert pat is not None  # created
        key = pat.packer(match._values)
        kid = pat.intern.get(key)
        old: FlowEntry | None = None
        if kid is None:
            kid = intern_new(pat.mask, key)
        else:
            for s in pat.slots_of(kid):
                if pat.prio[s] == priority:
                    if want_old:
                        old = pat.entry(s, match)
                    self._drop(pat, s, keep_pattern=True)
                    break
        return pat, kid, old

    def add_many(self, flows: Iterable[tuple[Match, int, tuple[Action, ...]]], *, now: float = 0.0) -> int:
        """ADD each (match, priority, actions) in turn (no cookie, timeouts or flags): the
        same table as calling :meth:`add` for each, without its per-call overhead (building
        big tables).  Returns how many were added."""
        n = 0
        last_acts: tuple[Action, ...] | None = None
        aid = 0
        for match, priority, actions in flows:
            if not isinstance(priority, int) or not 0 <= priority <= 0xFFFF:
                raise FlowTableError(f"flow priority={priority!r} is out of range",
                                     "give priority as an int in 0..65535")
            if actions is not last_acts:
                last_acts = actions
                aid = action_id(tuple(actions))
            pat, kid, _old = self._claim(match, priority, want_old=False)
            self._put(pat, kid, priority, aid, 0, 0, 0, 0, now)
            n += 1
        return n

    def modify(self, match: Match, actions: Iterable[Action], *, strict: bool, priority: int = 0,
               now: float = 0.0, cookie: int | None = None) -> list[FlowEntry]:
        """OFPFC_MODIFY(_STRICT): new actions (and ``cookie`` unless None) for the selected
        entries, in canonical order.  Non-strict selects every entry ``match`` covers
        (priority ignored); strict the entry with identical match and priority.  Returns
        ``[]`` (the entries as modified) when nothing is selected: the caller then ADDs.
        ``now`` is accepted for symmetry; modifying restarts no timer."""
        aid = action_id(tuple(actions))
        selected = self._select(match, strict, priority)
        for pat, s in selected:
            pat.set_actions(s, aid)
            if cookie is not None:
                if cookie:
                    pat.cookie[s] = cookie
                else:
                    pat.cookie.pop(s, None)
        if selected:
            self.version += 1
            self._sorted = None
        return [pat.entry(s) for pat, s in selected]

    def delete(self, match: Match, *, strict: bool, priority: int = 0, out_port: int = OFPP_NONE) -> list[FlowEntry]:
        """OFPFC_DELETE(_STRICT): remove and return (canonical order) the selected entries
        that output to ``out_port`` (any entry when out_port is OFPP_NONE)."""
        selected = self._filter_out_port(self._select(match, strict, priority), out_port)
        out = [pat.entry(s) for pat, s in selected]
        for pat, s in selected:
            self._drop(pat, s)
        return out

    def select(self, match: Match, out_port: int = OFPP_NONE) -> list[FlowEntry]:
        """Entries for flow/aggregate stats: covered by ``match``, filtered by ``out_port``."""
        return [pat.entry(s) for pat, s in self._filter_out_port(self._select(match, False, 0), out_port)]

    def refresh(self, entry: FlowEntry, now: float) -> None:
        """Note that ``entry`` (as :meth:`peek` returned it) saw traffic at ``now`` when no
        later use is recorded: its idle timer restarts, its counters stay."""
        h = self._find(entry.match, entry.priority)
        if h is not None:
            pat, s = h
            if now > pat.used.get(s, pat.installed[s]):
                pat.used[s] = now
                self._sorted = None

    @staticmethod
    def _filter_out_port(selected: list[Handle], out_port: int) -> list[Handle]:
        if out_port == OFPP_NONE:
            return selected
        return [(pat, s) for pat, s in selected
                if any(isinstance(a, (Output, Enqueue)) and a.port == out_port for a in pat.actions(s))]

    def _select(self, match: Match, strict: bool, priority: int) -> list[Handle]:
        """Handles of the selected entries, canonical order."""
        if strict:
            h = self._find(match, priority)
            return [] if h is None else [h]
        if match.wildcards == 0:  # an exact match covers only identical matches
            pat = self._pattern(match)
            kid = None if pat is None else pat.key_id(match._values)
            return [] if pat is None or kid is None else [(pat, s) for s in pat.slots_of(kid)]
        mk, mv = pack(match.masks), pack(match.values)
        port_fixed = not match.wildcards & OFPFW_IN_PORT
        mmasks = match.masks[1:]
        out: list[Handle] = []
        for ip, by_pat in self._hs.items():
            if port_fixed and ip != match.in_port:
                continue  # the entry wildcards in_port, or fixes another one: not covered
            for pat in by_pat.values():
                if not all(a & b == a for a, b in zip(mmasks, pat.masks[1:], strict=True)):
                    continue  # the entry wildcards bits the match fixes
                keys, kids = pat.keys, pat.kid
                if mk:
                    out.extend((pat, s) for s in pat.live() if keys[kids[s]] & mk == mv)
                else:
                    out.extend((pat, s) for s in pat.live())
        if len(out) > 1:
            out.sort(key=_rank_of)
        return out

    def _find(self, match: Match, priority: int) -> Handle | None:
        pat = self._pattern(match)
        if pat is None:
            return None
        kid = pat.key_id(match._values)
        if kid is None:
            return None
        for s in pat.slots_of(kid):
            if pat.prio[s] == priority:
                return pat, s
        return None

    # ------------------------------------------------------------ data plane
    def _hit(self, fields: tuple[int, ...]) -> Handle | None:
        order = self._order.get(fields[0])
        if order is None:
            order = self._order_for(fields[0])
        best: Handle | None = None
        brank: tuple[int, int, int, int] = (2, 0, 0, 0)
        for pat in order:
            if best is not None and (0 if pat.exact else 1, -pat.top) > brank[:2]:
                break
            kid = pat.intern.get(pat.packer(tuple(map(_and, fields, pat.masks))))
            if kid is None:
                continue
            s = pat.slot.get(kid)
            if s is None:
                continue
            r = (0 if pat.exact else 1, -pat.prio[s], -pat.bits, pat.wildcards)
            if r < brank:
                best, brank = (pat, s), r
        return best

    def peek(self, fields: tuple[int, ...]) -> FlowEntry | None:
        """The entry a packet with this 12-tuple would hit; no side effects."""
        h = self._hit(fields)
        return None if h is None else h[0].entry(h[1])

    def lookup(self, fields: tuple[int, ...], *, now: float, nbytes: int) -> FlowEntry | None:
        """:meth:`peek`, then count the packet on the entry and refresh its idle timer."""
        h = self._hit(fields)
        if h is None:
            return None
        pat, s = h
        pkts, nb = pat.counts.get(s, (0, 0))
        pat.counts[s] = (pkts + 1, nb + nbytes)
        pat.used[s] = now
        self._sorted = None
        return pat.entry(s)

    # ------------------------------------------------------------ time
    def expire(self, now: float) -> list[tuple[FlowEntry, int]]:
        """Remove entries whose deadline is <= now; (entry, OFPRR_*) by deadline, then canonical order."""
        expired: list[tuple[float, tuple[Any, ...], FlowEntry, int, Handle]] = []
        for pat in self._patterns():
            if not pat.idle and not pat.hard:
                continue
            for s in sorted(set(pat.idle) | set(pat.hard)):
                idle, hard = pat.deadline(s)
                if min(idle, hard) > now:
                    continue
                e = pat.entry(s)
                reason = ofp.OFPRR_HARD_TIMEOUT if hard <= idle else ofp.OFPRR_IDLE_TIMEOUT
                expired.append((min(idle, hard), e.rank(), e, reason, (pat, s)))
        expired.sort(key=lambda t: (t[0], t[1]))
        for t in expired:
            self._drop(*t[4])
        return [(e, reason) for _, _, e, reason, _ in expired]

    def next_expiry(self) -> float | None:
        """The earliest deadline (``expire`` at that time removes something), or None."""
        best = _INF
        for pat in self._patterns():
            for s in set(pat.idle) | set(pat.hard):
                d = min(pat.deadline(s))
                if d < best:
                    best = d
        return None if best == _INF else best

    # ------------------------------------------------------------ views
    def entries(self) -> list[FlowEntry]:
        """All entries in canonical order: exact first, then priority descending, then match."""
        srt = self._sorted
        if srt is None:
            srt = sorted(self._all(), key=FlowEntry.rank)
            if len(srt) <= self.SORTED_CACHE_MAX:
                self._sorted = srt
            else:
                return srt
        return list(srt)

    def canonical_key(self, *, with_counters: bool = True) -> tuple[Any, ...]:
        """A hashable summary independent of install order.  ``with_counters=False`` drops
        packet/byte counts, which never change forwarding (timers stay: they do)."""
        return tuple(e.key(with_counters) for e in self.entries())

    def copy(self) -> FlowTable:
        """An independent table with the same entries (for state snapshots)."""
        t = FlowTable()
        t._hs = {ip: {w: pat.clone() for w, pat in by.items()} for ip, by in self._hs.items()}
        t._n = self._n
        t._serial = self._serial
        t.version = self.version
        return t

    def pattern_index(self) -> dict[int | None, dict[int, PatternIndex]]:
        """in_port (None: entries wildcarding it) -> wildcards pattern (with OFPFW_IN_PORT
        set) -> :class:`PatternIndex`.  The table's own storage, so header-space analysis
        (invariants/headerspace/compiled.py) can compile a switch in time proportional to its ports,
        patterns and action lists instead of its rules.  Read-only for callers."""
        return self._hs

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[FlowEntry]:
        return iter(self.entries())

    def __repr__(self) -> str:
        return f"<FlowTable {len(self)} entries>"

    # ------------------------------------------------------------ storage
    def _patterns(self) -> Iterator[PatternIndex]:
        for by_pat in self._hs.values():
            yield from by_pat.values()

    def _all(self) -> Iterator[FlowEntry]:
        for pat in self._patterns():
            for s in pat.live():
                yield pat.entry(s)

    def _pattern(self, m: Match, create: bool = False) -> PatternIndex | None:
        w = m.wildcards
        ip = None if w & OFPFW_IN_PORT else m.in_port
        by_pat = self._hs.get(ip)
        if by_pat is None:
            if not create:
                return None
            by_pat = self._hs[ip] = {}
        pw = w | OFPFW_IN_PORT
        pat = by_pat.get(pw)
        if pat is None and create:
            pat = by_pat[pw] = PatternIndex(ip, w, m.masks)
            self._order.clear()
        return pat

    def _put(self, pat: PatternIndex, kid: int, priority: int, aid: int, cookie: int, idle: int, hard: int,
             flags: int, now: float) -> None:
        self._serial += 1
        _s, rose = pat.put(kid, priority, aid, cookie, idle, hard, flags, now, self._serial)
        if rose:
            self._order.clear()
        self._n += 1
        self.version += 1
        self._sorted = None

    def _drop(self, pat: PatternIndex, s: int, keep_pattern: bool = False) -> None:
        if pat.drop(s):
            self._order.clear()
        self._n -= 1
        self.version += 1
        self._sorted = None
        if not pat.slot and not keep_pattern:
            by_pat = self._hs[pat.in_port]
            del by_pat[pat.wildcards | OFPFW_IN_PORT]
            if not by_pat:
                del self._hs[pat.in_port]
            self._order.clear()

    def _order_for(self, in_port: int) -> list[PatternIndex]:
        """The patterns a packet arriving on ``in_port`` may hit, best-ranked first."""
        pats = [pat for ip in (in_port, None) for pat in self._hs.get(ip, {}).values() if pat.slot]
        pats.sort(key=lambda p: (0 if p.exact else 1, -p.top, -p.bits, p.wildcards))
        self._order[in_port] = pats
        return pats
