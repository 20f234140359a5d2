"""Branch coverage of app code, measured on the bytecode the concolic runs execute.

A *branch* is one arc of a conditional jump (``POP_JUMP_*_IF_*``,
``JUMP_IF_*_OR_POP``): every such instruction has two, the jump and the
fall-through.  The tracer follows opcodes (``sys.settrace`` with
``f_trace_opcodes``) only in frames of the app's own modules, so the
model's code (``Match``, ...) and ours are not counted.  The total is taken
over every function of the app that ran at least once.

Why measure arcs and not trust the engine's branch log: concrete branches
(``outport != in_port`` on two concrete ints) never reach the engine, and
"every branch of the handler was reached" must count them too.  The engine
does contribute what only it knows: a branch outcome whose negation the
solver proved unsatisfiable (say "the source MAC is multicast" when the
domain says the source is the sending host) maps, through the branch event
that preceded the jump, to an arc reported as *infeasible* rather than
missed; so do the branches that only such an arc leads to (reachability
over the bytecode's control-flow graph, exception handlers as extra roots).
"""

from __future__ import annotations

import dis
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

_JUMP_OPS = frozenset(op for op in dis.opmap if "JUMP" in op and "IF" in op)


@dataclass(frozen=True, order=True, slots=True)
class Arc:
    """One branch: the conditional jump at ``offset`` in ``function`` going to ``dest``."""

    function: str
    line: int
    offset: int
    dest: int

    def __str__(self) -> str:
        return f"{self.function}:{self.line} @{self.offset}->{self.dest}"


@dataclass
class Coverage:
    total: set[Arc] = field(default_factory=set)
    reached: set[Arc] = field(default_factory=set)
    infeasible: set[Arc] = field(default_factory=set)
    behind: set[Arc] = field(default_factory=set)   # infeasible because only an infeasible branch leads there
    functions: tuple[str, ...] = ()

    @property
    def missed(self) -> set[Arc]:
        return self.total - self.reached - self.infeasible

    def summary(self) -> str:
        return (f"branch coverage: {len(self.reached)}/{len(self.total)} reached, "
                f"{len(self.infeasible - self.reached)} infeasible under the domain constraints, "
                f"{len(self.missed)} missed")

    def to_json(self) -> dict:
        return {"total": len(self.total), "reached": len(self.reached),
                "infeasible": sorted(str(a) for a in self.infeasible - self.reached),
                "behind_infeasible": sorted(str(a) for a in self.behind),
                "missed": sorted(str(a) for a in self.missed), "functions": list(self.functions)}


def _jumps(code: CodeType) -> dict[int, tuple[int, int, int]]:
    """offset -> (jump target, fall-through, line) for the conditional jumps of ``code``."""
    ins = list(dis.get_instructions(code))
    out = {}
    line = code.co_firstlineno
    for k, i in enumerate(ins):
        if i.starts_line is not None:
            line = i.starts_line
        if i.opname in _JUMP_OPS and k + 1 < len(ins):
            out[i.offset] = (i.argval, ins[k + 1].offset, line)
    return out


class ArcTracer:
    """Collects executed branch arcs in the given modules across any number of runs."""

    def __init__(self, modules: Iterable[str]) -> None:
        self.modules = frozenset(modules)
        self.codes: dict[CodeType, dict[int, tuple[int, int, int]]] = {}
        self.hits: set[tuple[CodeType, int, int]] = set()
        self._pending: dict[int, tuple[Any, bool]] = {}     # id(frame) -> (site, taken) awaiting its jump
        self.outcome_arc: dict[tuple[Any, bool], tuple[CodeType, int, int]] = {}
        self._prev: Any = None

    # -- the engine's branch events (see sym.Tracer.record)
    def on_branch(self, frame: FrameType, site: Any, taken: bool) -> None:
        if frame.f_code in self.codes:
            self._pending[id(frame)] = (site, taken)

    # -- sys.settrace plumbing
    def __enter__(self) -> ArcTracer:
        self._prev = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(self._prev)
        self._pending.clear()

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call" or frame.f_globals.get("__name__") not in self.modules:
            return None
        code = frame.f_code
        jumps = self.codes.get(code)
        if jumps is None:
            jumps = self.codes[code] = _jumps(code)
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        state = [-1]
        hits = self.hits
        pending = self._pending

        def local(f: FrameType, ev: str, a: Any) -> Any:
            if ev == "opcode":
                prev = state[0]
                here = f.f_lasti
                if prev in jumps:
                    hits.add((code, prev, here))
                    p = pending.pop(id(f), None)
                    if p is not None and p[0] is not None and 0 <= prev - p[0].lasti <= 4:
                        self.outcome_arc[p] = (code, prev, here)
                state[0] = here
            elif ev == "return":
                pending.pop(id(f), None)
            return local

        return local

    # -- results
    def coverage(self, infeasible_outcomes: Iterable[tuple[Any, bool]] = ()) -> Coverage:
        cov = Coverage()

        def arc(code: CodeType, off: int, dest: int) -> Arc:
            return Arc(code.co_qualname, self.codes[code][off][2], off, dest)

        names = []
        for code, jumps in self.codes.items():
            names.append(code.co_qualname)
            for off, (target, fall, _line) in jumps.items():
                cov.total.add(arc(code, off, target))
                cov.total.add(arc(code, off, fall))
        for code, off, dest in self.hits:
            cov.reached.add(arc(code, off, dest))
        for site, taken in infeasible_outcomes:
            if type(taken) is not bool:
                continue  # a pin's "any other value": not one arc
            seen = self.outcome_arc.get((site, not taken))
            if seen is None:
                continue
            code, off, dest = seen
            target, fall, _ = self.codes[code][off]
            other = fall if dest == target else target
            cov.infeasible.add(arc(code, off, other))
        # Branches only reachable through an infeasible one are infeasible too.
        for code, jumps in self.codes.items():
            dead = {(a.offset, a.dest) for a in cov.infeasible if a.function == code.co_qualname}
            live = _reachable(code, dead)
            for off, (target, fall, _line) in jumps.items():
                if off not in live:
                    for dest in (target, fall):
                        a = arc(code, off, dest)
                        if a not in cov.reached:
                            cov.infeasible.add(a)
                            cov.behind.add(a)
        cov.functions = tuple(sorted(names))
        return cov


_NO_FALLTHROUGH = frozenset({"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
                             "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"})


def _reachable(code: CodeType, dead: set[tuple[int, int]]) -> set[int]:
    """Instruction offsets reachable from the entry (or an exception handler) without ``dead`` arcs."""
    ins = list(dis.get_instructions(code))
    succ: dict[int, list[int]] = {}
    for k, i in enumerate(ins):
        nxt = [ins[k + 1].offset] if k + 1 < len(ins) and i.opname not in _NO_FALLTHROUGH else []
        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
            nxt.append(i.argval)
        succ[i.offset] = [d for d in nxt if (i.offset, d) not in dead]
    roots = [ins[0].offset] if ins else []
    roots += [e.target for e in getattr(dis.Bytecode(code), "exception_entries", ())]
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        o = todo.pop()
        if o in seen:
            continue
        seen.add(o)
        todo.extend(succ.get(o, ()))
    return seen
