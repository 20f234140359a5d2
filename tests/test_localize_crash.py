"""The exception slice of netsleuth.localize.crash on hand-built failing calls: what an exception's
handler call recorded (its lines, the key tests and stores its reads depended on) ranked from the raising line."""

from netsleuth.localize.crash import FailingCall, exception_ranking, levels, own_frames
from netsleuth.localize.spectrum import Counts

APP = "/srv/app/switch.py"
PRE, STORE, TEST, READ, LOG = (APP, 60), (APP, 74), (APP, 76), (APP, 77), (APP, 71)
LOOP = ("/venv/os_ken/base/app_manager.py", 290)
CALL = FailingCall(frozenset({PRE, LOG, STORE, TEST, READ}), guards=frozenset({(TEST, READ)}))


def order(line):
    return (0, *line)


def test_the_raising_line_comes_first_then_the_test_that_led_to_it_then_the_rest_in_order():
    assert levels([CALL], [READ], order) == [[READ], [TEST], [PRE, LOG, STORE]]
    ranking = exception_ranking([CALL], [READ], {}, "ochiai", order, failing=1, passing=0)
    assert ranking is not None and ranking.separable
    assert [(r.line, r.rank, r.block) for r in ranking.lines] == [(77, 1, 1), (76, 2, 2), (60, 3, 3), (71, 4, 3),
                                                                 (74, 5, 3)]
    assert ranking.lines[0].counts == Counts(1, 0, 0, 0)


def test_a_store_the_raising_read_depended_on_and_the_callers_frames_rank_before_the_rest():
    helper = (APP, 40)
    call = FailingCall(frozenset({PRE, STORE, helper, READ}), flows=frozenset({(STORE, helper)}))
    # the read raised in a helper the handler called at READ: the helper's line, its store, then the caller's
    assert levels([call], [helper, READ], order) == [[helper], [STORE], [READ], [PRE]]


def test_a_test_of_another_read_is_no_dependence_of_the_raising_one():
    call = FailingCall(frozenset({PRE, TEST, READ}), guards=frozenset({(TEST, (APP, 90))}))
    assert levels([call], [READ], order) == [[READ], [PRE, TEST]]


def test_no_failing_call_or_no_frame_of_the_app_gives_no_ranking():
    assert exception_ranking([], [READ], {}, "ochiai", order, 0, 0) is None
    assert exception_ranking([CALL], [], {}, "ochiai", order, 1, 0) is None


def test_frames_are_the_apps_own_innermost_first_as_normalized():
    frames = [[LOOP[0], LOOP[1], "_event_loop"], [APP, 78, "_packet_in_handler"]]
    got = own_frames(frames, lambda f: f.startswith("/srv/app/"), lambda f, n: (f, n - 1))
    assert got == [(APP, 77)]


def test_a_key_error_of_a_read_the_call_had_tested_the_key_of_blames_the_test_first():
    # the test let a missing key through: had it been right, the read could not have raised
    assert levels([CALL], [READ], order, missing_key=True) == [[TEST], [READ], [PRE, LOG, STORE]]
    ranking = exception_ranking([CALL], [READ], {}, "ochiai", order, 1, 0, missing_key=True)
    assert ranking is not None and [(r.line, r.block) for r in ranking.lines[:2]] == [(76, 1), (77, 2)]
    unguarded = FailingCall(frozenset({PRE, READ}))
    assert levels([unguarded], [READ], order, missing_key=True) == [[READ], [PRE]]
