"""PEEK (schedulers/peek.py): inferred expectations on synthetic prefix replays, and --peek on the real switch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.schedulers.peek import Peek, match_window
from netsleuth.schedulers.replay import Expected, ReplayPlan
from netsleuth.trace import schema as ts

CH = (1, "c0", "to_controller")


def _msg(seq: int, name: str) -> ts.ControlToController:
    return ts.ControlToController(seq=seq, t=seq / 10, conn=1, controller="c0", dpid=1,
                                  msg={"type": "PACKET_IN"}, fp=("PACKET_IN", name))


def _inp(seq: int, i: int) -> ts.TrafficInjection:
    return ts.TrafficInjection(seq=seq, t=seq / 10, id=f"i{i}", host="h1", packet={}, dst="h2")


def _trace() -> list[ts.Event]:
    """hello, i0, a0, i1, a1, x(needs i0 and i1), i2, a2, i3.

    In the "system" below input k causes message a<k>, and i1 also causes x
    but only if i0 came before it.
    """
    return [_msg(0, "hello"), _inp(1, 0), _msg(2, "a0"), _inp(3, 1), _msg(4, "a1"), _msg(5, "x"),
            _inp(6, 2), _msg(7, "a2"), _inp(8, 3)]


class System:
    """A deterministic fake controller: what is delivered after the last input of a prefix."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def __call__(self, plan: ReplayPlan) -> list:
        ids = tuple(e.id for e in plan.inputs)
        self.calls.append((ids, tuple(ex.fp[1] for ex in plan.expected)))
        if not ids:
            return [(CH, ("PACKET_IN", "hello"))]
        last = ids[-1]
        out = [(CH, ("PACKET_IN", "a" + last[1:])), (CH, ("PACKET_IN", "noise"))]
        if last == "i1" and "i0" in ids:
            out.append((CH, ("PACKET_IN", "x")))
        return out


def _names(plan: ReplayPlan) -> list[list[str]]:
    lo, windows = 0, []
    for hi in plan.before:
        windows.append([ex.fp[1] for ex in plan.expected[lo:hi]])
        lo = hi
    return windows


def test_inference_drops_events_of_pruned_inputs_and_keeps_the_rest() -> None:
    events = _trace()
    inputs = [e for e in events if e.is_input]
    system = System()
    peek = Peek(events, system)
    plan = peek.infer([inputs[1], inputs[2], inputs[3]])  # i0 pruned
    # original windows: [hello, a0] before i1, [a1, x] before i2, [a2] before i3
    assert _names(ReplayPlan.from_trace(events, [inputs[1], inputs[2], inputs[3]]))[:3] == \
        [["hello", "a0"], ["a1", "x"], ["a2"]]
    # PEEK: a0 never comes (its input is gone), x needs i0; noise was never expected
    assert _names(plan) == [["hello"], ["a1"], ["a2"]]
    assert [e.id for e in plan.inputs] == ["i1", "i2", "i3"]
    # each prefix replay waited for what had been inferred for its earlier windows
    assert system.calls == [((), ()), (("i1",), ("hello",)), (("i1", "i2"), ("hello", "a1"))]


def test_prefixes_are_memoized_and_original_prefixes_cost_nothing() -> None:
    events = _trace()
    inputs = [e for e in events if e.is_input]
    system = System()
    peek = Peek(events, system)
    full = peek.infer(inputs)  # nothing pruned: the original expectations, no replay
    assert system.calls == [] and peek.stats.prefixes_replayed == 0 and peek.stats.original_windows == 4
    assert _names(full) == [["hello"], ["a0"], ["a1", "x"], ["a2"]]
    head = peek.infer(inputs[:2])  # a prefix of the original: still free
    assert system.calls == [] and _names(head) == [["hello"], ["a0"]]

    # i1 pruned: window 0 is the original's; windows 1 and 2 need prefixes (i0,) and (i0, i2)
    plan = peek.infer([inputs[0], inputs[2], inputs[3]])
    assert [c[0] for c in system.calls] == [("i0",), ("i0", "i2")]
    # before i2 the original expected a0, a1 and x: a1 and x belonged to the pruned i1
    assert _names(plan) == [["hello"], ["a0"], ["a2"]]
    peek.infer([inputs[0], inputs[2]])  # shares the prefix (i0,): a memo hit, no replay
    assert len(system.calls) == 2 and peek.stats.memo_hits == 1
    peek.infer([inputs[0], inputs[2], inputs[3]])  # the same candidate again: two more hits
    assert len(system.calls) == 2 and peek.stats.memo_hits == 3 and peek.stats.prefixes_replayed == 2


def test_empty_prefix_is_replayed_once_for_all_candidates_not_starting_with_the_first_input() -> None:
    events = _trace()
    inputs = [e for e in events if e.is_input]
    system = System()
    peek = Peek(events, system)
    peek.infer([inputs[2]])
    peek.infer([inputs[3]])
    peek.infer([inputs[1], inputs[3]])
    assert [c[0] for c in system.calls] == [(), ("i1",)]
    assert peek.stats.memo_hits == 2


def test_match_window_is_a_multiset_intersection_in_recorded_order() -> None:
    ex = [Expected(i, 0.0, CH, ("F", n)) for i, n in enumerate(["a", "b", "a", "c"])]
    seen = [(CH, ("F", "a")), (CH, ("F", "c")), (CH, ("F", "z")), ((2, "c0", "to_controller"), ("F", "b"))]
    assert [e.seq for e in match_window(ex, seen)] == [0, 3]  # one a only; b was on another channel
    assert match_window(ex, seen + [(CH, ("F", "a"))]) == [ex[0], ex[2], ex[3]]


@pytest.mark.real
@pytest.mark.slow
def test_minimize_with_peek_on_the_real_switch(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    d = run_minimize(MinimizeOptions(trace=migration_blackhole_trace, out=tmp_path, executor="serial",
                                     peek=True))
    assert d["one_minimal"] and d["inputs_after"] <= 3, d["mcs_in_words"]
    assert "host_migration" in [e["kind"] for e in d["mcs"]]
    assert d["reproduction_rate"] == 1.0
    rows = [json.loads(line) for line in (tmp_path / "replays" / "w0" / "replays.jsonl").read_text().splitlines()]
    peeks = [r for r in rows if "peek" in r]
    pk = d["peek"]
    assert pk["prefixes_replayed"] == len(peeks) >= 1
    assert pk["seconds"] > 0 and pk["inferred_expected"] < pk["original_expected"]
    assert sum(1 for r in rows if "replay" in r) == d["replays"]
    # prefix replays check no invariants: they leave no verdict
    assert all("reproduced" not in r for r in peeks)
