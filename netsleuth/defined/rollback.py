"""DEFINED-RB: speculative delivery with checkpoints and cascading rollback.

A node delivers every entry as soon as it has it (speculation). The history
of delivered entries is kept sorted by the ordering function; when an
arrival sorts before something already delivered -- an earlier group, or
out of sequence in the current group -- the node

1. restores the checkpoint taken just before the first entry the new one
   precedes (a pickled :class:`~netsleuth.defined.node_runtime.NodeCheckpoint`),
2. "unsends" every message it sent while delivering the rolled-back entries:
   each destination gets a rollback notice naming the message, and rolls
   itself back if it had already delivered it (cascading),
3. delivers the history again in order, which re-sends.

With ``batch_rollback`` (the simulator's default) the notices a replay
owes one neighbour and the replay's new messages to it travel as one
packet, which the neighbour applies before delivering anything: applied
one at a time, the neighbour would first deliver (and forward) the
intermediate state without the cancelled message, then roll that back too
when the replacement landed. Messages are still counted one by one.

Unsending is lazy (Time Warp's "lazy cancellation"): the messages a
rollback undoes wait in a limbo; if the replay sends an identical message
(same destination, tags and payload -- a message's tags depend only on
the entry that caused it, so a regenerated message has the very same tags) the original stands and nothing
is transmitted. Only messages the replay does not regenerate get a rollback
notice. Without this, every rollback cascades through the whole network
even when the replay changes nothing downstream.

Only external events need recording: everything else is a deterministic
function of them (see :mod:`netsleuth.defined.ordering` for why rollbacks
terminate). Entries older than ``window`` groups are committed: their
checkpoints are dropped, bounding memory like the paper's sliding window.
"""

from __future__ import annotations

import bisect
from typing import Any, Protocol

from netsleuth.defined.message import START_OSEQ, Entry, Tags, canon
from netsleuth.defined.node_runtime import NodeCheckpoint, NodeRuntime
from netsleuth.defined.ordering import Ordering
from netsleuth.errors import NetsleuthError


class RollbackWindowError(NetsleuthError):
    pass


class Transport(Protocol):
    def transmit(self, e: Entry, depart: float) -> None: ...

    def transmit_anti(self, src: str, dst: str, uid: int, depart: float) -> None: ...

    def transmit_batch(self, src: str, dst: str, uids: list[int], entries: list[Entry], depart: float) -> None:
        """Only called with ``batch_rollback``: notices and messages as one packet (one arrival)."""


class RBRuntime(NodeRuntime):
    def __init__(self, *args: Any, ordering: Ordering, transport: Transport, horizon: int, window: int,
                 proc_time: float, restore_time: float, checkpoint_every: int = 4, batch_rollback: bool = False,
                 **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.ordering = ordering
        self.transport = transport
        self.horizon = horizon
        self.window = window
        self.proc_time = proc_time
        self.restore_time = restore_time
        self.checkpoint_every = max(1, checkpoint_every)
        self.batch_rollback = batch_rollback
        self.history: list[Entry] = []
        self.keys: list[tuple] = []
        self.delivered = 0
        self.ckpts: list[bytes | None] = []
        self.sent: list[list[Entry]] = []
        self.records: list[tuple | None] = []
        self.committed: list[tuple] = []
        self.last_committed_key: tuple | None = None
        self.pending_timers: list[Entry] = []
        self.cancelled: set[int] = set()
        self.known_group = 0
        self.ext_seq = 0
        self.clock = 0.0
        self.limbo: dict[tuple, list[Entry]] = {}
        self.limbo_uids: set[int] = set()
        self.outbox: list[Entry] = []
        self.ext_log: list[dict] = []
        # Optional process-level checkpoints (procs.ForkCheckpointer): take(host) -> token,
        # discard(token), resume(host, token) -- which replaces this process and never returns.
        self.checkpointer: Any = None
        self._pending_restore: Any = None

    # ------------------------------------------------------------- outputs
    @staticmethod
    def _sig(e: Entry) -> tuple:
        return (e.kind, e.dst, e.tags, e.name, canon(e.payload))

    def _from_limbo(self, e: Entry) -> Entry | None:
        if not self.limbo:
            return None
        sig = self._sig(e)
        lst = self.limbo.get(sig)
        if not lst:
            return None
        old = lst.pop()
        if not lst:
            del self.limbo[sig]
        self.limbo_uids.discard(old.uid)
        return old

    def _out_msg(self, e: Entry) -> Entry:
        old = self._from_limbo(e)
        if old is not None:
            return old
        self.counters.sends += 1
        # Held until the delivery loop ends, so that the rollback notices for
        # what this replay did not regenerate go out first on each FIFO link.
        self.outbox.append(e)
        return e

    def _out_timer(self, e: Entry, seconds: float) -> Entry:
        old = self._from_limbo(e)
        if old is not None:
            return old
        self._accept(e)
        return e

    # -------------------------------------------------------------- inputs
    def start(self) -> None:
        self._accept(Entry(self.new_uid(), "start", self.name, self.name,
                           Tags(0, 0, 0, self.name, START_OSEQ, "start", self.name, 0)))
        self.run()

    def external(self, event: dict) -> dict:
        """An external event happens here now: stamp it with the current group and record it."""
        tags = Tags(self.known_group, 0, 0, self.name, self.ext_seq, "ext", self.name, 0)
        self.ext_seq += 1
        rec = {"node": self.name, "group": tags.group, "oseq": tags.oseq, "event": event}
        self.ext_log.append(rec)  # before run(): a fork checkpoint may take over inside it
        self._accept(Entry(self.new_uid(), "ext", self.name, self.name, tags, event))
        self.run()
        return rec

    def arrive(self, e: Entry, run: bool = True) -> None:
        if e.uid in self.cancelled:
            self.cancelled.discard(e.uid)
            return
        self.advance(e.tags.group)
        self._accept(e)
        if run:
            self.run()

    def anti(self, uid: int, run: bool = True) -> None:
        """A neighbour unsent message ``uid``: forget it, rolling back if it was delivered."""
        for j, e in enumerate(self.history):
            if e.uid == uid:
                if j < self.delivered:
                    self._rollback(j)
                del self.history[j]
                del self.keys[j]
                if run:
                    self.run()
                return
        self.cancelled.add(uid)  # the notice overtook the message

    def receive_batch(self, uids: list[int], entries: list[Entry]) -> None:
        """A rollback packet: the sender's notices, then what its replay sent, applied before one run.

        Applying them one by one would deliver the intermediate state (the
        old message gone, its replacement not yet there) and forward it,
        only to roll that back when the replacement lands a moment later.
        """
        for uid in uids:
            self.anti(uid, run=False)
        for e in entries:
            self.arrive(e, run=False)
        self.run()

    def advance(self, group: int) -> None:
        """Virtual time reached ``group`` (a beacon, or a message tagged with it)."""
        group = min(group, self.horizon)
        if group <= self.known_group:
            return
        self.known_group = group
        due = [t for t in self.pending_timers if t.tags.group <= group]
        if due:
            self.pending_timers = [t for t in self.pending_timers if t.tags.group > group]
            for t in due:
                self._insert(t)
            self.run()
        self._commit(group - self.window)

    # ------------------------------------------------------------ machinery
    def _accept(self, e: Entry) -> None:
        if e.kind == "timer" and e.tags.group > self.known_group:
            if e.tags.group <= self.horizon:
                self.pending_timers.append(e)
            return
        self._insert(e)

    def _insert(self, e: Entry) -> None:
        k = self.ordering.key(e.tags)
        if self.last_committed_key is not None and k < self.last_committed_key:
            raise RollbackWindowError(
                f"node {self.name} got a group-{e.tags.group} entry after committing up to group "
                f"{self.known_group - self.window}", "raise the rollback window (--window) or the beacon interval")
        pos = bisect.bisect_left(self.keys, k)
        if pos < len(self.keys) and self.keys[pos] == k:
            raise AssertionError(f"two entries at {self.name} share the ordering key {k}")
        if pos < self.delivered:
            self._rollback(pos)
        self.history.insert(pos, e)
        self.keys.insert(pos, k)

    def _rollback(self, pos: int) -> None:
        # Checkpoints are sparse (every ``checkpoint_every`` deliveries, the
        # paper's "fork() for every several messages"): restore the last one at
        # or before ``pos``; the entries between are delivered again and, being
        # the same, send the same messages, which lazy cancellation keeps.
        while self.ckpts[pos] is None:
            pos -= 1
        c = self.counters
        c.rollbacks += 1
        c.rolled_back_deliveries += self.delivered - pos
        if self.checkpointer is None:
            # the loop above stopped at a stored checkpoint
            self.st = NodeCheckpoint.restore(self.ckpts[pos])  # type: ignore[arg-type]
        else:
            # The checkpoint process takes over at the next run(), once this
            # operation has finished updating the history it will inherit.
            for tok in self.ckpts[pos + 1:]:
                if tok is not None:
                    self.checkpointer.discard(tok)
            if self._pending_restore is not None:
                self.checkpointer.discard(self._pending_restore)
            self._pending_restore = self.ckpts[pos]
        self.clock += self.restore_time
        undo = [s for lst in self.sent[pos:] for s in lst]
        del self.ckpts[pos:], self.sent[pos:], self.records[pos:]
        self.delivered = pos
        for s in undo:
            self.limbo.setdefault(self._sig(s), []).append(s)
            self.limbo_uids.add(s.uid)

    def _flush_limbo(self) -> dict[str, list[int]]:
        """After a replay: cancel what it did not send again.

        With ``batch_rollback`` the notices are returned per destination, to
        travel in one packet with the replay's new messages to that
        destination (the paper: Z "tells node V to roll back the messages
        m_d and m_c, and then sends messages {m_a, m_d, m_c}"); otherwise
        each notice is transmitted on its own.
        """
        c = self.counters
        held: dict[str, list[int]] = {}
        for lst in self.limbo.values():
            for s in lst:
                if s.kind == "timer":
                    self._drop_local(s.uid)
                else:
                    c.unsent += 1
                    c.anti_sent += 1
                    if self.batch_rollback:
                        held.setdefault(s.dst, []).append(s.uid)
                    else:
                        self.transport.transmit_anti(self.name, s.dst, s.uid, self.clock)
        self.limbo.clear()
        self.limbo_uids.clear()
        return held

    def _drop_local(self, uid: int) -> None:
        for j in range(len(self.history) - 1, self.delivered - 1, -1):
            if self.history[j].uid == uid:
                del self.history[j]
                del self.keys[j]
                return
        self.pending_timers = [t for t in self.pending_timers if t.uid != uid]

    def run(self) -> None:
        if self._pending_restore is not None:
            tok, self._pending_restore = self._pending_restore, None
            self.checkpointer.resume(self, tok)  # a fork checkpoint replaces this process here
        while self.delivered < len(self.history):
            e = self.history[self.delivered]
            if e.uid in self.limbo_uids:
                # A timer whose setter was replayed without setting it again.
                self.limbo_uids.discard(e.uid)
                sig = self._sig(e)
                self.limbo[sig] = [x for x in self.limbo[sig] if x.uid != e.uid]
                if not self.limbo[sig]:
                    del self.limbo[sig]
                del self.history[self.delivered], self.keys[self.delivered]
                continue
            d = self.delivered
            recent = any(self.ckpts[i] is not None for i in range(max(0, d - self.checkpoint_every + 1), d))
            if recent:
                self.ckpts.append(None)
            elif self.checkpointer is None:
                self.ckpts.append(self.st.snapshot())
            else:
                self.ckpts.append(self.checkpointer.take(self))
            self._sent_now = []
            rec = self.dispatch(e)
            self.sent.append(self._sent_now)
            self._sent_now = None
            self.records.append(rec)
            self.delivered += 1
            self.clock += self.proc_time
        held = self._flush_limbo() if self.limbo else {}
        out, self.outbox = self.outbox, []
        if held:
            batches: dict[str, list[Entry]] = {d: [] for d in held}
            for e in out:
                if e.dst in batches:
                    batches[e.dst].append(e)
            for dst in sorted(held):
                self.transport.transmit_batch(self.name, dst, held[dst], batches[dst], self.clock)
            out = [e for e in out if e.dst not in batches]
        for e in out:
            self.transport.transmit(e, self.clock)

    def _commit(self, below_group: int) -> None:
        n = 0
        while n < self.delivered and self.history[n].tags.group < below_group:
            n += 1
        while 0 < n < self.delivered and self.ckpts[n] is None:
            n -= 1  # the new front must keep a checkpoint to roll back to
        if not n:
            return
        self.committed.extend(r for r in self.records[:n] if r is not None)
        self.last_committed_key = self.keys[n - 1]
        if self.checkpointer is not None:
            for tok in self.ckpts[:n]:
                if tok is not None:
                    self.checkpointer.discard(tok)
        del self.history[:n], self.keys[:n], self.ckpts[:n], self.sent[:n], self.records[:n]
        self.delivered -= n

    def delivery_sequence(self) -> list[tuple]:
        return self.committed + [r for r in self.records if r is not None]

    def virtual_now(self, entry: Entry) -> float:
        return entry.tags.group * self.interval
