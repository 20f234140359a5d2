"""The ranking of netsleuth.localize.spectrum against the formulas' published definitions, on hand-built spectra."""

import math

import pytest

from netsleuth.localize.spectrum import Counts, Run, UnknownFormulaError, counts, rank, score

A, B, C, D = ("x.py", 10), ("x.py", 20), ("x.py", 5), ("y.py", 1)
# Two failing runs, two passing: B only ever runs when the violation comes back.
RUNS = [Run(True, frozenset({A, B, C})), Run(True, frozenset({A, B})),
        Run(False, frozenset({A, C, D})), Run(False, frozenset({A, D}))]


def test_counts_are_the_four_of_the_literature():
    table = counts(RUNS)
    assert table[A] == Counts(ef=2, ep=2, nf=0, np=0)
    assert table[B] == Counts(ef=2, ep=0, nf=0, np=2)
    assert table[C] == Counts(ef=1, ep=1, nf=1, np=1)
    assert D not in table  # no failing run executed it: not a candidate


def test_ochiai_is_ef_over_sqrt_failed_times_executed():
    assert score("ochiai", Counts(2, 2, 0, 0)) == pytest.approx(2 / math.sqrt(2 * 4))
    assert score("ochiai", Counts(2, 0, 0, 2)) == pytest.approx(1.0)
    assert score("ochiai", Counts(1, 1, 1, 1)) == pytest.approx(1 / math.sqrt(2 * 2))
    assert score("ochiai", Counts(0, 3, 2, 0)) == 0.0


def test_dstar_two_is_ef_squared_over_ep_plus_nf():
    assert score("dstar", Counts(2, 2, 0, 0)) == pytest.approx(4 / 2)
    assert score("dstar", Counts(1, 1, 1, 1)) == pytest.approx(1 / 2)
    assert score("dstar", Counts(3, 1, 2, 5)) == pytest.approx(9 / 3)
    assert math.isinf(score("dstar", Counts(2, 0, 0, 2)))  # every failing run, no passing one


def test_tarantula_is_failed_ratio_over_both_ratios():
    assert score("tarantula", Counts(2, 2, 0, 0)) == pytest.approx(0.5)
    assert score("tarantula", Counts(2, 0, 0, 2)) == pytest.approx(1.0)
    assert score("tarantula", Counts(1, 3, 1, 1)) == pytest.approx((1 / 2) / (1 / 2 + 3 / 4))


@pytest.mark.parametrize("formula", ["ochiai", "dstar", "tarantula"])
def test_the_line_only_failing_runs_execute_ranks_first(formula):
    ranking = rank(RUNS, formula)
    assert ranking.separable and ranking.reason == ""
    assert (ranking.failing, ranking.passing) == (2, 2)
    assert (ranking.lines[0].file, ranking.lines[0].line) == B
    assert ranking.rank_of(B) == 1
    assert ranking.rank_of(D) is None


def test_ochiai_and_dstar_order_the_rest_by_score():
    for formula in ("ochiai", "dstar"):
        assert [(r.file, r.line) for r in rank(RUNS, formula).lines] == [B, A, C]


def test_a_tied_block_puts_its_earliest_line_first():
    # Tarantula: A (line 10) and C (line 5) both score 0.5; line 5 runs first in straight-line code.
    ranking = rank(RUNS, "tarantula")
    assert [(r.file, r.line) for r in ranking.lines] == [B, C, A]
    assert [r.tied for r in ranking.lines] == [1, 2, 2]
    assert [r.rank for r in ranking.lines] == [1, 2, 3]


def test_no_passing_run_cannot_rank():
    ranking = rank([r for r in RUNS if r.failed])
    assert not ranking.separable
    assert "no replay passed" in ranking.reason


def test_no_failing_run_cannot_rank():
    ranking = rank([r for r in RUNS if not r.failed])
    assert not ranking.separable and ranking.lines == ()
    assert "no replay reproduced" in ranking.reason


def test_failing_and_passing_runs_with_the_same_lines_cannot_rank():
    same = frozenset({A, B})
    ranking = rank([Run(True, same), Run(False, same), Run(True, same)])
    assert not ranking.separable
    assert "same lines" in ranking.reason


def test_an_unknown_formula_is_a_usage_error():
    with pytest.raises(UnknownFormulaError) as info:
        rank(RUNS, "jaccard")
    assert info.value.exit_code == 2 and "ochiai" in info.value.fix


def test_lines_run_by_the_same_runs_are_one_block_and_other_counts_start_the_next():
    # lines 1-3 straight-line code (same runs), line 4 only in the failing run: blocks 1 (line 4), 2 (lines 1-3)
    head = {("app.py", n) for n in (1, 2, 3)}
    runs = [Run(True, frozenset(head | {("app.py", 4)})), Run(False, frozenset(head)), Run(False, frozenset())]
    ranking = rank(runs)
    assert [(r.line, r.rank, r.block) for r in ranking.lines] == [(4, 1, 1), (1, 2, 2), (2, 3, 2), (3, 4, 2)]
    assert ranking.block_of(("app.py", 3)) == 2 and ranking.block_of(("app.py", 9)) is None


# A learning switch as handler calls: STORE runs in every call, READ only where a known destination is
# looked up; the failing call (and one passing call) read a value an earlier call stored at STORE.
PRE, STORE, READ, FLOOD = ("s.py", 60), ("s.py", 74), ("s.py", 77), ("s.py", 79)
CALLS = [Run(True, frozenset({PRE, STORE, READ}), frozenset({(STORE, READ)})),
         Run(False, frozenset({PRE, STORE, READ}), frozenset({(STORE, READ)})),
         Run(False, frozenset({PRE, STORE, FLOOD})), Run(False, frozenset({PRE, STORE, FLOOD}))]


def test_a_store_an_earlier_call_made_ranks_right_after_the_read_that_used_it():
    by_lines = rank([Run(r.failed, r.lines) for r in CALLS])
    assert [(r.line, r.read_at) for r in by_lines.lines] == [(77, None), (60, None), (74, None)]
    ranked = rank(CALLS)
    assert [(r.line, r.read_at) for r in ranked.lines] == [(77, None), (74, READ), (60, None)]
    store = ranked.lines[1]
    assert store.counts == Counts(ef=1, ep=1, nf=0, np=2) and store.score == ranked.lines[0].score
    assert (store.rank, store.block, store.tied) == (2, 1, 2)   # ties with its read, which ran later
    assert ranked.rank_of(STORE) == 2 and ranked.separable


def test_a_flow_no_failing_run_read_through_is_no_candidate():
    runs = [Run(True, frozenset({PRE, READ})), Run(False, frozenset({PRE, READ}), frozenset({(STORE, READ)}))]
    assert all(r.read_at is None for r in rank(runs).lines) and rank(runs).rank_of(STORE) is None


def test_a_flow_with_better_counts_than_its_read_ranks_ahead_of_it():
    # the read runs in every call, but only the failing call read what the earlier call stored
    runs = [Run(True, frozenset({PRE, READ}), frozenset({(STORE, READ)})), Run(False, frozenset({PRE, READ})),
            Run(False, frozenset({PRE, READ}))]
    ranked = rank(runs)
    assert (ranked.lines[0].line, ranked.lines[0].read_at) == (74, READ) and ranked.lines[0].score == 1.0
