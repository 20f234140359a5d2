"""The path-exploration loop: run, record the path condition, negate branches, solve, repeat.

This is generational concolic search (DART/SAGE) with a depth-first work
list: after a run with path condition ``b0 .. bn``, for every ``i`` at or
after the run's *bound* the solver is asked for an input satisfying
``domain /\\ b0 .. b(i-1) /\\ not bi``; each answer becomes a new run whose
bound is ``i + 1``, so every prefix is negated exactly once and every
feasible path (up to ``max_runs``) is reached once.  The solver is
incremental: the domain constraints are asserted once, and walking a path
pushes one scope per prefix element (``push``/``pop``), so z3 reuses what
it learned about the shared prefix.

Domain constraints live *in the solver* (NICE filtered the inputs it got
afterwards and threw 10 of 12 away); the caller still checks every
generated input against an independent predicate, and :class:`Exploration`
reports generated vs kept so the claim is measured rather than assumed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from netsleuth.nice.concolic.sym import Branch, Site, Tracer


@dataclass
class PathResult:
    """One explored path: the concrete input that drives it and what happened."""

    values: dict[str, int]
    signature: tuple                   # ((site, taken), ...) in order: identifies the path
    branches: int                      # length of the path condition
    outcome: Any                       # what the run function returned (or "raised: ...")
    kept: bool = True                  # the input passed the independent domain check


@dataclass
class Exploration:
    """What a concolic exploration found and how it went."""

    paths: list[PathResult] = field(default_factory=list)
    generated: int = 0      # inputs the solver produced (including the first)
    kept: int = 0           # of those, inputs the independent domain check accepted
    runs: int = 0
    duplicates: int = 0     # runs that followed an already-seen path (imprecision)
    divergences: int = 0    # runs that did not follow the predicted prefix
    solver_calls: int = 0
    unsat: int = 0
    truncated: bool = False  # max_runs stopped the search with inputs still pending
    reached: set = field(default_factory=set)      # (site, outcome) seen
    refuted: set = field(default_factory=set)      # (site, outcome) negated and found infeasible
    feasible_pending: set = field(default_factory=set)  # (site, outcome) solvable but not run (truncated)

    def infeasible(self) -> set:
        """Branch outcomes never reached that the solver proved impossible wherever they were tried."""
        return {x for x in self.refuted if x not in self.reached and x not in self.feasible_pending}


def _values(model: z3.ModelRef, variables: dict[str, z3.BitVecRef]) -> dict[str, int]:
    return {name: model.eval(v, model_completion=True).as_long() for name, v in variables.items()}


def explore(run: Callable[[dict[str, int], Tracer], Any], variables: dict[str, z3.BitVecRef],
            domain: Sequence[z3.BoolRef], *, accept: Callable[[dict[str, int]], bool] | None = None,
            max_runs: int = 64, strategy: str = "dfs", observer: Any = None,
            seed_values: dict[str, int] | None = None,
            preferences: Sequence[z3.BoolRef] = ()) -> Exploration:
    """Explore the paths of ``run`` over inputs satisfying ``domain``.

    ``run(values, tracer)`` executes the code under test on the concrete
    ``values`` with symbolic proxies that log into ``tracer``.  ``accept`` is
    the independent domain check behind the generated-vs-kept count;
    inputs it rejects are counted, run (their paths lead on), and marked
    ``kept=False`` in :attr:`Exploration.paths`.  ``strategy`` is ``"dfs"``
    (newest input first) or ``"bfs"`` (generation by generation).
    ``preferences`` are soft constraints on the values the path leaves free
    (an ICMP echo *request*, an ARP *request*): honoured where they do not
    contradict the path, dropped where they do (see :func:`_solve`).
    """
    if strategy not in ("dfs", "bfs"):
        raise ValueError(f"unknown strategy {strategy!r}")
    ex = Exploration()
    # The solver lives in the variables' context.  Callers that need reproducible inputs give
    # each exploration a fresh z3.Context: within one context z3's models depend on what was
    # solved there before (a second identical exploration in a warm context can get other
    # values for the fields the constraints leave free).
    solver, prefs = _solver(variables, domain, preferences)

    def solve() -> dict[str, int] | None:
        return _solve(solver, prefs, variables, ex)

    def admit(values: dict[str, int]) -> bool:
        """Count a generated input and check it independently of the solver."""
        ex.generated += 1
        ok = accept is None or accept(values)
        ex.kept += ok
        return ok


    first = _first_input(solver, variables, seed_values, solve)
    if first is None:
        ex.unsat += 1
        return ex  # the domain itself is empty
    first_ok = admit(first)
    # work items: (values, bound, expected prefix signature)
    work: list[tuple[dict[str, int], int, tuple, bool]] = [(first, 0, (), first_ok)]
    seen: set[tuple] = set()
    while work:
        if ex.runs >= max_runs:
            ex.truncated = True
            for _, _, expected, _ in work:
                if expected:
                    ex.feasible_pending.add(expected[-1])
            break
        values, bound, expected, ok = work.pop() if strategy == "dfs" else work.pop(0)
        tracer = Tracer(observer)
        try:
            outcome = run(values, tracer)
        except Exception as exc:  # the app crashed on this input: still a path, and worth reporting
            outcome = f"raised: {type(exc).__name__}: {exc}"
        ex.runs += 1
        log: list[Branch] = tracer.log
        sig = tuple((b.site, b.label) for b in log)
        for s in sig:
            ex.reached.add(s)
        if expected and not _follows(sig, expected):
            ex.divergences += 1
        if sig in seen:
            ex.duplicates += 1
            continue
        seen.add(sig)
        ex.paths.append(PathResult(values, sig, len(log), outcome, ok))
        new = _negate(solver, log, bound, solve, admit, ex)
        if strategy == "dfs":
            work.extend(reversed(new))  # pop() takes the shallowest negation of the newest run first
        else:
            work.extend(new)
    return ex


def _solver(variables: dict[str, z3.BitVecRef], domain: Sequence[z3.BoolRef],
            preferences: Sequence[z3.BoolRef]) -> tuple[z3.Solver, list]:
    """A solver holding ``domain``, in the variables' z3 context, and the assumption literals of
    the soft ``preferences`` (``p_i -> preference_i`` asserted once)."""
    ctx = next(iter(variables.values())).ctx if variables else None
    solver = z3.Solver(ctx=ctx)
    solver.set("random_seed", 0)
    for c in domain:
        solver.add(c)
    prefs = []
    for i, c in enumerate(preferences):
        lit = z3.Bool(f"__prefer_{i}", ctx)
        solver.add(z3.Implies(lit, c))
        prefs.append(lit)
    return solver, prefs


def _first_input(solver: z3.Solver, variables: dict[str, z3.BitVecRef], seed_values: dict[str, int] | None,
                 solve: Callable[[], dict[str, int] | None]) -> dict[str, int] | None:
    """The first input: ``seed_values`` completed by the solver when they satisfy the domain,
    else any input of the domain; None when the domain is empty."""
    if seed_values is not None:
        solver.push()
        for n, v in seed_values.items():
            if n in variables:
                solver.add(variables[n] == v)
        first = solve()
        solver.pop()
        if first is not None:
            return first
    return solve()


def _solve(solver: z3.Solver, prefs: list, variables: dict[str, z3.BitVecRef],
           ex: Exploration) -> dict[str, int] | None:
    """A model of the asserted constraints honouring as many preferences as z3's cores allow."""
    ex.solver_calls += 1
    if solver.check() != z3.sat:
        return None
    model = solver.model()
    active = list(prefs)
    while active:
        ex.solver_calls += 1
        if solver.check(*active) == z3.sat:
            model = solver.model()
            break
        core = {str(c) for c in solver.unsat_core()}
        if not core:
            break
        active = [p for p in active if str(p) not in core]
    return _values(model, variables)


def _negate(solver: z3.Solver, log: list[Branch], bound: int, solve: Callable[[], dict[str, int] | None],
            admit: Callable[[dict[str, int]], bool], ex: Exploration) -> list[tuple]:
    """Solve ``prefix /\\ not b_i`` for every i >= bound, incrementally along the path."""
    out = []
    solver.push()
    try:
        for i, b in enumerate(log):
            if i >= bound:
                solver.push()
                solver.add(z3.Not(b.cond))
                vals = solve()
                flipped = (b.site, not b.taken) if b.pinned is None else (b.site, ("!=", b.pinned))
                if vals is None:
                    ex.unsat += 1
                    ex.refuted.add(flipped)
                else:
                    # An input the independent check rejects still runs (its path leads to
                    # others, as in NICE) but is not a representative.
                    ok = admit(vals)
                    expected = tuple((x.site, x.label) for x in log[:i]) + (flipped,)
                    out.append((vals, i + 1, expected, ok))
                solver.pop()
            solver.push()
            solver.add(b.cond)
    finally:
        # one pop for the outer push and one per prefix element
        solver.pop(len(log) + 1)
    return out


def _follows(sig: tuple, expected: tuple) -> bool:
    """Did a run take the predicted prefix?  A negated pin ("!=", v) is followed by any other value."""
    if len(sig) < len(expected):
        return False
    for (site, label), (esite, elabel) in zip(sig, expected, strict=False):
        if site != esite:
            return False
        if type(elabel) is tuple and elabel[0] == "!=":
            if not (type(label) is tuple and label[1] != elabel[1]):
                return False
        elif label != elabel:
            return False
    return True


def site_label(site: Site | None) -> str:
    return "?" if site is None else str(site)
