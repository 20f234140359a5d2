"""Outcomes of a group under every delivery order, and under one ordering function, run after run.

Each run starts the network afresh (:class:`~.net.LiveNet`), lets group 0's
messages gather at the relay, delivers them in the order asked for and
reads the observer's best path from the daemon itself. Messages are named
across runs by (sender, receiver, number on that link direction), which the
daemons' deterministic start-up keeps stable; their labels (p1, p2, ...)
come from the path each announces.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from netsleuth.defined.daemons.net import Held, LiveNet
from netsleuth.defined.daemons.scenarios import DaemonScenario
from netsleuth.defined.ordering import by_name
from netsleuth.errors import NetsleuthError


class ExploreError(NetsleuthError):
    pass


@dataclass
class Outcome:
    order: list[str]          # labels of the messages, in delivery order
    best: str                 # the observer's best path afterwards
    seconds: float
    deliveries: list[str] = field(default_factory=list)
    deliver_ms: list[float] = field(default_factory=list)   # release -> receiver has processed it, per message

    def to_json(self) -> dict:
        return {"order": self.order, "best": self.best, "seconds": round(self.seconds, 3),
                "deliveries": self.deliveries, "deliver_ms": [round(x, 3) for x in self.deliver_ms]}


def msg_label(n: LiveNet, h: Held) -> str:
    """The path a message announces (its origin's label), else its number."""
    assert n.reader is not None
    for m in h.messages:
        if m.get("next_hop") and m.get("nlri"):
            return n.reader.label({"next_hop": m["next_hop"]})
    return f"#{h.id}"


def one_run(sc: DaemonScenario, daemon: str, order: list[tuple] | None = None, ordering: str = "defined",
            hold: bool = True, quiet: float = 1.0) -> Outcome:
    """Start the network, deliver group 0 in ``order`` (identities) or by ``ordering``, read the outcome."""
    t0 = time.monotonic()
    with LiveNet(sc.net, daemon, by_name(ordering), hold=hold) as n:
        assert n.reader is not None
        if not hold:   # arrival order: the daemons' own nondeterminism, nothing held
            n.collect(quiet=quiet)
            _settle(n, sc)
            return Outcome([], n.reader.best(sc.observer, sc.prefix), time.monotonic() - t0)
        pending = n.collect(quiet=quiet, expect=sc.expect)
        if order is not None:
            pending = _by_identity(n, pending, order, quiet)
        return _deliver_all(n, sc, pending, t0)


def _deliver_all(n: LiveNet, sc: DaemonScenario, pending: list[Held], t0: float) -> Outcome:
    """Deliver ``pending`` in that order and read the observer's best path: the end of every run."""
    assert n.reader is not None
    labels, words, ms = [], [], []
    for h in pending:
        t1 = time.perf_counter()
        n.deliver(h.id)
        ms.append((time.perf_counter() - t1) * 1000)
        labels.append(msg_label(n, h))
        words.append(h.words())
    return Outcome(labels, n.reader.best(sc.observer, sc.prefix), time.monotonic() - t0, words, ms)


def _by_identity(n: LiveNet, pending: list[Held], order: list[tuple], quiet: float) -> list[Held]:
    """The held messages named by ``order``, waiting for later groups when one is not held yet."""
    out = []
    for ident in order:
        found = n.find(ident)
        if found is None:
            n.next_group()
            n.collect(quiet=quiet)
            found = n.find(ident)
        if found is None:
            raise ExploreError(f"this run did not hold message {ident[0]}->{ident[1]} #{ident[2]}",
                               "the daemons' start-up changed between runs; rerun")
        out.append(found)
    return out


def _settle(n: LiveNet, sc: DaemonScenario) -> None:
    """Arrival order: wait until the observer has a path from every message the scenario expects."""
    from netsleuth.defined.daemons.control import wait_for

    reader = n.reader
    assert reader is not None
    want = sc.expect or 1
    wait_for(lambda: len(reader.routes(sc.observer).get(sc.prefix, [])) >= want, n.timeout,
             f"{sc.observer} to learn {want} paths to {sc.prefix}")


def group_identities(sc: DaemonScenario, daemon: str, quiet: float = 1.0) -> list[tuple]:
    """The identities of group 0's messages, learnt from one run, in DEFINED's order."""
    with LiveNet(sc.net, daemon) as n:
        return [h.identity() for h in n.collect(quiet=quiet, expect=sc.expect)]


def _first_run(sc: DaemonScenario, daemon: str, quiet: float) -> tuple[list[tuple], Outcome]:
    """Group 0's identities (as :func:`group_identities`), and the same run carried on to deliver them
    in that order (DEFINED's): the first order's outcome, without starting the network once more."""
    t0 = time.monotonic()
    with LiveNet(sc.net, daemon) as n:
        pending = n.collect(quiet=quiet, expect=sc.expect)
        return [h.identity() for h in pending], _deliver_all(n, sc, pending, t0)


def all_orders(sc: DaemonScenario, daemon: str, on_run: Callable[[int, int, Outcome], None] | None = None,
               quiet: float = 1.0, ids: list[tuple] | None = None, before: list[tuple] | None = None,
               limit: int = 720) -> list[Outcome]:
    """A group delivered in every order (one fresh run each); FIFO per sender is kept.

    ``ids``: the group's messages (default: group 0's, learnt from a first
    run); ``before``: what to deliver first, in that order (earlier groups).
    """
    first: Outcome | None = None
    if ids is None and not before:
        ids, first = _first_run(sc, daemon, quiet)
    elif ids is None:
        ids = group_identities(sc, daemon, quiet)
    orders = [list(p) for p in itertools.islice(itertools.permutations(ids), limit) if _fifo(list(p))]
    out = []
    for i, o in enumerate(orders):
        # the run that learnt the identities delivered them in their own order: that order's run
        r = first if first is not None and o == ids else one_run(sc, daemon, (before or []) + o, quiet=quiet)
        r.order = r.order[len(before or []):]
        out.append(r)
        if on_run:
            on_run(i, len(orders), r)
    return out


def _fifo(order: list[tuple]) -> bool:
    """One sender's messages to one receiver stay in their sequence order (TCP is a FIFO)."""
    last: dict[tuple, int] = {}
    for src, dst, seq in order:
        if last.get((src, dst), -1) > seq:
            return False
        last[(src, dst)] = seq
    return True


def verdict(sc: DaemonScenario, outcomes: list[Outcome], runs: str = "orders") -> str:
    """One sentence: does the observer's best path depend on the delivery order (or differ between runs)?"""
    bests = sorted({o.best for o in outcomes})
    if len(bests) == 1:
        where = f"under all {len(outcomes)} orders" if runs == "orders" else f"in all {len(outcomes)} runs"
        return f"best path for {sc.prefix} at {sc.observer} is {bests[0]} {where}"
    if runs != "orders":
        counts = ", ".join(f"{b} in {sum(o.best == b for o in outcomes)}" for b in bests)
        return f"best path for {sc.prefix} at {sc.observer} differs between runs: {counts} of {len(outcomes)}"
    under = "; ".join(f"{b} under " + ", ".join("-".join(o.order) for o in outcomes if o.best == b) for b in bests)
    return f"best path for {sc.prefix} at {sc.observer} depends on the delivery order: {' / '.join(bests)} ({under})"
