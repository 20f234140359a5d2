"""State-space search: DFS with state matching, strategies as filters, DPOR, random walk.

**DFS.**  Depth-first over :meth:`System.enabled`, matching states by the
hash of their canonical key (state.py).  A state is expanded once and all of
its (strategy-filtered) transitions are fired, so without a depth bound the
numbers of transitions and unique states do not depend on the order the
enabled set is explored in -- the property NICE's hash (which dropped the
switches' command queues) did not have; ``order="reverse"`` checks it.  With
``max_depth`` a state first met deep and later met shallower is expanded
again, so the bound is sound (nothing within the bound is missed).

Visited states are remembered by the 64-bit hash of their canonical key (as
NICE and SPIN's bitstate-free mode do), not by the key itself: memory stays
at about a hundred bytes per state (Table 1's pyswitch, N = 5 pings: 1.15 M
states, the whole process peaks at 263-283 MB, 210 MB before steps were
also remembered by identity and queues interned (system.py, state.py: those
caches are bounded); N = 6 with DPOR: 10.4 M states and 23.1 M transitions
in 1.25 GB before them).  Two different states colliding would
merge them; at 10^7 states the chance is about 3 x 10^-6 (birthday bound),
and the tests check the counts against a breadth-first search that compares
full keys.

**Strategies** are filters over the enabled set (NICE section 5; filters.py):
PKT-SEQ bounds each host's outstanding packets (credits in the host state;
the number of packets is the scenario's); NO-DELAY makes every
switch<->controller exchange atomic; UNUSUAL delays control-plane work while
the data plane can move and applies a handler's commands to several switches
in reverse issue order; FLOW-IR fixes one relative order between the sends of packets the app
says belong to different flows (``App.is_same_flow``).  ``random`` walks
from the initial state choosing uniformly with one seeded ``random.Random``.

**DPOR** (``dpor=True``) prunes states, not only transitions, where it can.
At each new state it fires only a *persistent set* of the enabled transitions
(stubborn.py): computed before firing from a conservative "may touch"
footprint of every transition name -- node input queues (FIFO: popping a
non-empty head commutes with pushing a tail; a switch's process_pkt also
reads which of its inputs are empty), a switch's flow table and buffers, a
host's state, the controller as one object, the state of every property that
does not promise to commute -- with necessary-enabling sets for the names
that are disabled.  Two provisos keep it sound with state matching: when a
member of the set leads back to a state on the DFS stack (the ignoring
problem: a postponed transition could be postponed around a cycle forever)
or causes a violation (the path stops, so nothing postponed would run below
it), the state is expanded fully.  Every search only reaches reachable
states, so DPOR never counts more unique states than the full search; the
persistent sets make it reach the same end states and violate the same
properties (tests/test_nice_dpor.py checks both, and checks the predicted
footprints against brute-force commutation).

Where the prediction would be incomplete -- optional faults, input
discovery, a non-commuting property that watches every step
(NoBlackHolesMobile), a depth bound (reordering a path can lengthen it), a
strategy filter other than PKT-SEQ -- DPOR falls back to sleep sets
(Godefroid) over the run-time footprints that ``fire`` records (``Effects``,
``independent``, effects.py): after exploring t from s, a sibling u explored later does
not explore t again below u when u and t were independent at s.  Sleep sets
never prune a reachable state, only transitions whose result is reached
through a commuting interleaving.  Under the state-wide NO-DELAY and UNUSUAL
filters not even sleep sets are used (``dpor_note`` says so).  (NICE's own
DPOR, Flanagan-Godefroid backtracking, is unsound with state matching
without extra bookkeeping.)
"""

from __future__ import annotations

import gc
import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netsleuth.nice.effects import Effects, independent
from netsleuth.nice.filters import FILTERS, parse_strategy
from netsleuth.nice.interning import forget
from netsleuth.nice.state import SystemState
from netsleuth.nice.stubborn import Stubborn, stubborn_applies
from netsleuth.nice.system import System
from netsleuth.nice.transitions import Transition
from netsleuth.nice.violation import PropertyViolation


@dataclass
class Found:
    """One violation with the path (transitions from the initial state) that reaches it."""

    violation: PropertyViolation
    path: list[Transition]
    transitions: int          # transitions fired when it was found
    seconds: float
    at_end: bool              # found by an end-of-execution check (after the last transition)


@dataclass
class SearchResult:
    transitions: int = 0
    unique_states: int = 0
    revisits: int = 0
    max_depth: int = 0
    seconds: float = 0.0
    completed: bool = False       # the whole (bounded) space was explored
    interrupted: bool = False
    stopped_by: str = ""          # "", "violation", "max-transitions", "interrupt"
    dpor_note: str = ""           # why --dpor was not applied, when it was not
    found: list[Found] = field(default_factory=list)
    violation_counts: dict = field(default_factory=dict)

    def rate(self) -> float:
        return self.transitions / self.seconds if self.seconds > 0 else 0.0


@dataclass
class SearchOptions:
    strategy: str = "full"
    dpor: bool = False
    order: str = "forward"            # or "reverse"
    max_depth: int | None = None
    max_transitions: int | None = None
    stop_at_first: bool = False       # stop at the first violation
    stop_on: tuple[str, ...] = ()     # stop at the first violation of one of these properties
    keep_per_property: int = 1        # counterexamples kept per property
    seed: int = 0
    walks: int | None = None          # random: number of walks (default: until max_transitions)
    progress: Callable[[SearchResult], None] | None = None  # called at most twice a second


# Filters that choose among the enabled transitions by looking at the whole state
# (NO-DELAY: "the first pending controller command goes alone"; UNUSUAL: "control
# plane last").  Sleep sets assume that a transition independent of u is still
# explored after u; these filters can withhold it there, so the interleaving a
# sleep set relies on may never be explored (seen: the load balancer's BUG-IX
# missed under NO-DELAY with sleep sets).  With them the search stays exhaustive.
_STATE_WIDE_FILTERS = ("no-delay", "unusual")
# Filters under which a transition's enabledness depends only on its own host (PKT-SEQ's
# credits): the persistent-set prediction covers them (stubborn.py).
_LOCAL_FILTERS = ("full", "pkt-seq")


# ------------------------------------------------------------------ the search
class Explorer:
    def __init__(self, system: System, options: SearchOptions) -> None:
        parts = parse_strategy(options.strategy)
        self.system = system
        self.opt = options
        self.random = "random" in parts
        self.sleep_sets = options.dpor
        wide = [p for p in parts if p in _STATE_WIDE_FILTERS]
        if options.dpor and wide:
            self.sleep_sets = False
        filters = [f for p in parts if (f := FILTERS[p]) is not None]
        if not filters:
            self.filter = None
        elif len(filters) == 1:
            self.filter = filters[0]
        else:
            def combined(system: System, st: SystemState, en: list) -> list:
                for f in filters:
                    en = f(system, st, en)
                return en
            self.filter = combined
        self.result = SearchResult()
        if options.dpor and not self.sleep_sets:
            self.result.dpor_note = (f"DPOR not applied: sleep sets are unsound with the {'/'.join(wide)} "
                                     "filter (the search stays exhaustive)")
        # Persistent sets (stubborn.py) where the predicted footprints are complete; elsewhere
        # the sleep sets alone.
        self.stubborn: Stubborn | None = None
        if self.sleep_sets and not self.random:
            why = stubborn_applies(system)
            if not why and any(p not in _LOCAL_FILTERS for p in parts):
                why = "a strategy filter that looks beyond one host"
            if not why and options.max_depth is not None:
                why = "a depth bound (reordering can lengthen a path)"
            if why:
                self.result.dpor_note = f"persistent sets not applied ({why}): sleep sets only"
            else:
                self.stubborn = Stubborn(system)
        self._t0 = 0.0
        self._stop = False
        self._last_progress = 0.0
        self._visited: Any = ()

    def _enabled(self, st: SystemState) -> tuple[list, bool]:
        """(filtered, reversed as asked) enabled transitions, and whether the state is an end state."""
        system = self.system
        en = system.enabled(st)
        # without optional faults nothing enabled is a fault: an end state has nothing enabled
        end = all(system.is_fault(t) for t in en) if system.faults else not en
        if self.filter is not None and en:
            en = self.filter(self.system, st, en)
        if self.opt.order == "reverse":
            en.reverse()
        return en, end

    def _record(self, violations: list[PropertyViolation], path: list, at_end: bool) -> None:
        r = self.result
        for v in violations:
            n = r.violation_counts.get(v.prop, 0)
            r.violation_counts[v.prop] = n + 1
            if n < self.opt.keep_per_property:
                r.found.append(Found(v, list(path), r.transitions, time.perf_counter() - self._t0, at_end))
            if self.opt.stop_at_first or v.prop in self.opt.stop_on:
                self._stop = True
                r.stopped_by = "violation"

    def run(self) -> SearchResult:
        self._t0 = time.perf_counter()
        # Python's automatic collector scans the whole tracked heap (memo tables, caches, the
        # states on the stack) every so often: about 30% of a search's time, for garbage the
        # search does not make (states and components hold no cycles).  It is off during
        # the search; _tick collects the youngest generation, where any cycle a handler
        # made would be, and the collector is back on at the end.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            if self.random:
                self._random()
            elif self.stubborn is not None:
                self._dfs_persistent()
            elif self.sleep_sets:
                self._dfs_sleep()
            else:
                self._dfs()
        except KeyboardInterrupt:
            self.result.interrupted = True
            self.result.stopped_by = "interrupt"
            self.result.unique_states = len(self._visited)
            self.result.completed = False
        finally:
            forget()
            if gc_was_enabled:
                gc.enable()
        self.result.seconds = time.perf_counter() - self._t0
        return self.result

    def _tick(self) -> None:
        """Every 1,024 transitions: young garbage, budget check and (at most twice a second) progress."""
        gc.collect(0)
        r = self.result
        if self.opt.max_transitions is not None and r.transitions >= self.opt.max_transitions:
            self._stop = True
            r.stopped_by = r.stopped_by or "max-transitions"
        if self.opt.progress is not None:
            now = time.perf_counter()
            if now - self._last_progress >= 0.5:
                self._last_progress = now
                r.seconds = now - self._t0
                r.unique_states = len(self._visited)
                self.opt.progress(r)

    def _dfs(self) -> None:
        """Plain DFS with state matching: the hot loop of every full search.

        A frame is (state, iterator over its transitions); the loop runs the top frame's
        iterator until it yields a new state to descend into.  Counters are locals, written
        back to the result at every tick and at the end.
        """
        system, r, opt = self.system, self.result, self.opt
        s0 = system.initial()
        visited: dict[int, int] = {s0.hash(): 0}
        self._visited = visited
        en0, end0 = self._enabled(s0)
        path: list[Transition] = []
        if end0:
            self._record(system.at_end(s0), path, True)
        stack: list[tuple] = [(s0, iter(en0))]
        max_depth = opt.max_depth
        fire = system.fire
        enabled = self._enabled
        seen = visited.get
        incremental = SystemState.incremental_hash
        n = r.transitions
        revisits = r.revisits
        deepest = r.max_depth
        try:
            while stack and not self._stop:
                st, todo = stack[-1]
                depth = len(stack)            # the depth of st's children
                for t in todo:
                    child, fx = fire(st, t, False)
                    n += 1
                    if not n & 1023:
                        r.transitions, r.revisits, r.max_depth = n, revisits, deepest
                        self._tick()
                    if fx.violations:
                        r.transitions = n
                        path.append(t)
                        self._record(fx.violations, path, False)
                        path.pop()
                        if self._stop:
                            break
                        continue
                    h = child.hash_after(st) if incremental else child.hash()
                    old = seen(h)
                    if old is not None and (max_depth is None or old <= depth):
                        revisits += 1
                        if self._stop:
                            break
                        continue
                    visited[h] = depth
                    if depth > deepest:
                        deepest = depth
                    cen, end = enabled(child)
                    if end:
                        r.transitions = n
                        path.append(t)
                        self._record(system.at_end(child), path, True)
                        path.pop()
                    if cen and (max_depth is None or depth < max_depth):
                        path.append(t)
                        stack.append((child, iter(cen)))
                        break
                    if self._stop:
                        break
                else:
                    stack.pop()
                    if path:
                        path.pop()
        finally:
            r.transitions, r.revisits, r.max_depth = n, revisits, deepest
        r.unique_states = len(visited)
        r.completed = not stack and not self._stop

    def _dfs_sleep(self) -> None:
        """DFS with sleep sets and state matching (see the module docstring)."""
        system, r, opt = self.system, self.result, self.opt
        s0 = system.initial()
        # hash -> (depth, frozenset of transitions asleep when the state was expanded)
        visited: dict[int, tuple[int, frozenset]] = {s0.hash(): (0, frozenset())}
        self._visited = visited
        en0, end0 = self._enabled(s0)
        path: list[Transition] = []
        if end0:
            self._record(system.at_end(s0), path, True)
        # frame: [state, transitions to explore, index, sleep {t: effects}, done [(t, effects)]]
        stack: list[list] = [[s0, en0, 0, {}, []]]
        max_depth = opt.max_depth
        fire = system.fire
        while stack and not self._stop:
            frame = stack[-1]
            st, en, k, sleep, done = frame
            if k >= len(en):
                stack.pop()
                if path:
                    path.pop()
                continue
            frame[2] = k + 1
            t = en[k]
            if t in sleep:
                continue
            child, fx = fire(st, t)
            r.transitions += 1
            if r.transitions % 1024 == 0:
                self._tick()
            csleep = _child_sleep(sleep, done, fx)
            if fx.violations:
                # Not "done": the path stopped here, so nothing below t was explored and
                # siblings must not put t to sleep.
                path.append(t)
                self._record(fx.violations, path, False)
                path.pop()
                continue
            done.append((t, fx))
            h = child.hash()
            depth = len(stack)
            cs = frozenset(csleep)
            old = visited.get(h)
            if old is not None:
                odepth, osleep = old
                if osleep <= cs and (max_depth is None or odepth <= depth):
                    r.revisits += 1
                    continue
                # explore again only what was asleep before and is awake now
                todo_only = None if (max_depth is not None and depth < odepth) else (osleep - cs)
                visited[h] = (min(odepth, depth), osleep & cs)
                cen, end = self._enabled(child)
                if todo_only is not None:
                    cen = [u for u in cen if u in todo_only]
                if cen and (max_depth is None or depth < max_depth):
                    path.append(t)
                    stack.append([child, cen, 0, csleep, []])
                continue
            visited[h] = (depth, cs)
            if depth > r.max_depth:
                r.max_depth = depth
            cen, end = self._enabled(child)
            if end:
                path.append(t)
                self._record(system.at_end(child), path, True)
                path.pop()
            if cen and (max_depth is None or depth < max_depth):
                path.append(t)
                stack.append([child, cen, 0, csleep, []])
        r.unique_states = len(visited)
        r.completed = not stack and not self._stop

    def _dfs_persistent(self) -> None:
        """DFS with persistent sets, the stack proviso and state matching (see the module docstring).

        At a new state only a persistent subset P of the enabled transitions is fired.  The
        whole enabled set is fired instead (added to the frame lazily) when a member of P
        leads back to a state on the DFS stack (the cycle proviso: otherwise a transition
        outside P could be postponed forever around a cycle) or causes a violation (the path
        stops there, so the transitions it postponed would never run).
        """
        system, r = self.system, self.result
        stubborn = self.stubborn
        s0 = system.initial()
        h0 = s0.hash()
        visited: dict[int, int] = {h0: 0}
        self._visited = visited
        on_stack: set[int] = {h0}
        en0, end0 = self._enabled(s0)
        path: list[Transition] = []
        if end0:
            self._record(system.at_end(s0), path, True)
        # frame: [state, transitions to fire, index, all enabled (None once fully expanded), hash]
        # this search runs only with DPOR, which sets stubborn
        p0 = stubborn.persistent(s0, en0)  # type: ignore[union-attr]
        stack: list[list] = [[s0, p0, 0, en0 if len(p0) < len(en0) else None, h0]]
        fire = system.fire
        while stack and not self._stop:
            frame = stack[-1]
            todo = frame[1]
            k = frame[2]
            if k >= len(todo):
                stack.pop()
                on_stack.discard(frame[4])
                if path:
                    path.pop()
                continue
            frame[2] = k + 1
            t = todo[k]
            child, fx = fire(frame[0], t, False)
            r.transitions += 1
            if r.transitions % 1024 == 0:
                self._tick()
            if fx.violations:
                path.append(t)
                self._record(fx.violations, path, False)
                path.pop()
                self._expand_fully(frame)
                continue
            h = child.hash()
            if h in on_stack:
                self._expand_fully(frame)
            if h in visited:
                r.revisits += 1
                continue
            depth = len(stack)
            visited[h] = depth
            if depth > r.max_depth:
                r.max_depth = depth
            cen, end = self._enabled(child)
            if end:
                path.append(t)
                self._record(system.at_end(child), path, True)
                path.pop()
            if cen:
                path.append(t)
                # this search runs only with DPOR, which sets stubborn
                p = stubborn.persistent(child, cen)  # type: ignore[union-attr]
                stack.append([child, p, 0, cen if len(p) < len(cen) else None, h])
                on_stack.add(h)
        r.unique_states = len(visited)
        r.completed = not stack and not self._stop

    @staticmethod
    def _expand_fully(frame: list) -> None:
        en = frame[3]
        if en is not None:
            chosen = set(frame[1])
            frame[1] = frame[1] + [u for u in en if u not in chosen]
            frame[3] = None

    def _random(self) -> None:
        system, r, opt = self.system, self.result, self.opt
        rng = _random.Random(opt.seed)
        visited: set[int] = set()
        self._visited = visited
        s0 = system.initial()
        visited.add(s0.hash())
        max_depth = opt.max_depth or 1000
        if opt.walks is None and opt.max_transitions is None:
            opt.walks = 100
        walks = 0
        while not self._stop and (opt.walks is None or walks < opt.walks):
            walks += 1
            st = s0
            path: list[Transition] = []
            for _ in range(max_depth):
                en, end = self._enabled(st)
                if end:
                    self._record(system.at_end(st), path, True)
                if not en or self._stop:
                    break
                t = en[rng.randrange(len(en))]
                st, fx = system.fire(st, t, False)
                path.append(t)
                r.transitions += 1
                if r.transitions % 1024 == 0:
                    self._tick()
                if fx.violations:
                    self._record(fx.violations, path, False)
                    break
                visited.add(st.hash())
                r.max_depth = max(r.max_depth, len(path))
        r.unique_states = len(visited)
        r.completed = False


def _child_sleep(sleep: dict, done: list, fx: Effects) -> dict:
    """The sleep set below a transition with footprint ``fx``: the inherited sleepers and the
    earlier siblings (``done``) independent of it, each with its footprint."""
    csleep = {u: ufx for u, ufx in sleep.items() if independent(ufx, fx)}
    for u, ufx in done:
        if independent(ufx, fx):
            csleep[u] = ufx
    return csleep
