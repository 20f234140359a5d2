"""How an OpenFlow 1.0 flow table keeps its entries: in columns, by in_port and wildcard pattern.

A network of millions of rules cannot afford Python objects per
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
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from netsleuth.model.actions import Action
from netsleuth.model.flowentry import FlowEntry
from netsleuth.model.headerbits import interner, pack, packer, small_int, unpacker
from netsleuth.model.match import Match

if TYPE_CHECKING:
    # numpy holds a big pattern's key id -> slot map as two sorted int32 arrays (see SlotMap):
    # 8 bytes per entry where a dict costs about 40, and header-space analysis reads them whole.
    # It is imported where the arrays are made: a map that stays a dict (every table of a model
    # checker, a small network or a trace read back) never loads it.
    import numpy as np
    import numpy.typing as npt

    I32 = npt.NDArray[np.int32]

_INF = float("inf")


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


# The columns of a map that has never been compacted: an empty int32 array.array, which answers
# len() and tolist() as an empty numpy array does (nothing indexes it: _find stops at _hi = -1).
_NONE_I32 = cast("I32", array("i"))


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

    __slots__ = ("_d", "_k", "_s", "_n", "_dead", "_hi", "_kv", "_sv")

    def __init__(self) -> None:
        self._d: dict[int, int] = {}
        self._k: I32 = _NONE_I32   # key ids, ascending
        self._s: I32 = _NONE_I32   # their slots (-1: removed)
        self._n = 0                # live entries in the arrays
        self._dead = 0             # removed entries still in the arrays
        self._hi = -1              # the largest key id in the arrays (-1: none)
        # memoryviews of the two arrays, made by the first lookup after they were (re)built
        self._kv: memoryview | None = None
        self._sv: memoryview | None = None

    def _find(self, kid: int) -> int:
        """Index of ``kid`` in the arrays, or -1.  A binary search through a memoryview of the
        key array: each probe a C-level read, where numpy's searchsorted costs a dispatch
        (a few microseconds when its machinery is not in the CPU's caches, as in a flow_mod's
        few lookups) and, given a Python int, a cast of the whole int32 array first."""
        if kid > self._hi:  # key ids are handed out in order: new keys are usually past the end
            return -1
        k = self._kv
        if k is None:
            k = self._kv = memoryview(self._k)  # type: ignore[arg-type]  # (numpy arrays are buffers)
            self._sv = memoryview(self._s)  # type: ignore[arg-type]
        i = bisect_left(k, kid)
        return i if i < len(k) and k[i] == kid else -1

    def get(self, kid: int, default: int | None = None) -> int | None:
        s = self._d.get(kid)
        if s is not None:
            return s
        if self._n:
            i = self._find(kid)
            if i >= 0:
                v = self._sv[i]  # type: ignore[index]  # (_find made it)
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
        import numpy as np

        d = self._d
        k, s = self._k, self._s
        if self._dead:
            live = s >= 0
            k, s = k[live], s[live]
        if d:
            dk = np.fromiter(d.keys(), dtype=np.int32, count=len(d))
            k = np.concatenate((k, dk))
            s = np.concatenate((s, np.fromiter(d.values(), dtype=np.int32, count=len(d))))
            # Key ids are handed out in order, so the dict's keys are usually new ones, added in
            # order, all past the arrays' (a table filled route by route): the concatenation is
            # sorted already, and the sort and two gathers (most of a merge) are not needed.
            if dk[0] <= self._hi or (len(dk) > 1 and not (dk[1:] > dk[:-1]).all()):
                order = np.argsort(k, kind="stable")
                k, s = k[order], s[order]
        self._k, self._s, self._n, self._dead, self._d = k, s, len(k), 0, {}
        self._kv = self._sv = None
        self._hi = int(k[-1]) if len(k) else -1

    def arrays(self) -> tuple[I32, I32]:
        """(key ids ascending, their slots): every entry, as the map's own arrays (after
        :meth:`compact`; read-only for callers).  A small map stays a dict and gives copies."""
        import numpy as np

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

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        # (the memoryviews cannot be pickled or deep-copied: made again by the next lookup)
        return None, {n: getattr(self, n) for n in self.__slots__ if n not in ("_kv", "_sv")}

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        for n, v in state[1].items():
            setattr(self, n, v)
        self._kv = self._sv = None

    def copy(self) -> SlotMap:
        c = SlotMap()
        c._d = dict(self._d)
        c._k = self._k  # key ids never change in place
        c._s = self._s.copy() if len(self._s) else self._s  # the empty columns are never written
        c._n, c._dead, c._hi = self._n, self._dead, self._hi
        c._kv = c._sv = None
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
