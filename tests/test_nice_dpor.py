"""DPOR with persistent sets: fewer states, the same end states and the same violated properties.

Every model here is small enough for the full search to finish.  Besides the
violated properties, the tests compare the set of *end states* (states where
nothing but faults can happen) the two searches reach: a persistent-set
search must reach every one of them, so a footprint prediction that missed a
dependency shows up there even when no property happens to notice.  The last
tests check the predicted footprints directly against the semantics: from a
state, every transition outside the persistent set that can run before it
(explored by brute force) must commute with every member.
"""

from __future__ import annotations

import pytest

from netsleuth.nice import bug_scenarios as bs
from netsleuth.nice.explore import Explorer, SearchOptions
from netsleuth.nice.loading import make_system
from netsleuth.nice.scenarios import build_config
from netsleuth.nice.stubborn import Stubborn, _name


def _pyswitch(app="pyswitch", burst=None, **kw):
    def make():
        cfg = build_config(f"app:{app}", **kw)
        if burst is not None:
            cfg.pkt_seq_burst = burst
        return make_system(cfg)
    return make


def _bug(b, variant=None):
    return lambda: bs.build_system(bs.get(b), variant)


_NBH = ("NoBlackHoles", "NoForgottenPackets")
MODELS = {
    "pings1": (_pyswitch(scenario="pings", pings=1, properties=_NBH), "full"),
    "pings2": (_pyswitch(scenario="pings", pings=2, properties=_NBH), "full"),
    "pings3": (_pyswitch(scenario="pings", pings=3, properties=_NBH), "full"),
    "pings3-pktseq2": (_pyswitch(scenario="pings", pings=3, burst=2), "pkt-seq"),
    "direct2": (_pyswitch(scenario="direct", pings=2, properties=("StrictDirectPaths", "DirectPaths")), "full"),
    "direct2-fixed": (_pyswitch(scenario="direct", pings=2, app="pyswitch-fixed",
                                properties=("StrictDirectPaths", "DirectPaths", "NoForgottenPackets")), "full"),
    "mobile2": (_pyswitch(scenario="mobile", pings=2, properties=_NBH), "full"),
    "loop": (_pyswitch(scenario="loop"), "full"),
    "loop-fixed2": (_pyswitch(scenario="loop", app="pyswitch-fixed", pings=2), "full"),
    "linear3-cross": (_pyswitch(topo="linear,3", hosts="h1>h3:1,h3>h1:1", properties=_NBH), "full"),
    "single3-two-senders": (_pyswitch(topo="single,3", hosts="h1>h2:1,h3>h2:1",
                                      properties=("NoBlackHoles", "DirectPaths")), "full"),
    "bug-ix-pktseq2": (lambda: bs.build_system(bs.get("IX"), strategy="pkt-seq", burst=2), "pkt-seq"),
    "bug-vii-pktseq1": (lambda: bs.build_system(bs.get("VII"), strategy="pkt-seq", burst=1), "pkt-seq"),
    **{f"bug-{b.lower()}-{v or 'bug'}": (_bug(b, v), "full")
       for b in ("IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "XIII") for v in (None, "fixed")},
}
# models where persistent sets must prune states (not only transitions)
PRUNES = ("bug-ix-pktseq2", "bug-vii-pktseq1", "pings2", "pings3", "loop", "loop-fixed2", "linear3-cross",
          "mobile2", "bug-iv-bug", "bug-ix-bug",
          "bug-ix-fixed", "bug-xii-bug", "bug-xiii-bug")


def _search(system, strategy, dpor, order="forward"):
    ends = set()
    at_end = system.at_end

    def recording(st):
        ends.add(st.hash())
        return at_end(st)

    system.at_end = recording
    return Explorer(system, SearchOptions(strategy=strategy, dpor=dpor, order=order)).run(), ends


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "loop" else n for n in MODELS])
def test_persistent_sets_keep_end_states_and_violations(name):
    make, strategy = MODELS[name]
    full, full_ends = _search(make(), strategy, False)
    red, red_ends = _search(make(), strategy, True)
    assert full.completed and red.completed
    assert red.dpor_note == ""                   # persistent sets were applied
    assert set(red.violation_counts) == set(full.violation_counts)
    assert red.unique_states <= full.unique_states
    assert red.transitions <= full.transitions
    assert red_ends == full_ends
    if name in PRUNES:
        assert red.unique_states < full.unique_states


def test_reverse_order_reaches_the_same_end_states():
    make, strategy = MODELS["mobile2"]
    full, full_ends = _search(make(), strategy, False)
    red, red_ends = _search(make(), strategy, True, order="reverse")
    assert red_ends == full_ends and set(red.violation_counts) == set(full.violation_counts)
    assert red.unique_states < full.unique_states


def test_violations_are_found_with_stop_at_first():
    cfg = build_config("app:pyswitch", scenario="loop")
    r = Explorer(make_system(cfg), SearchOptions(dpor=True, stop_at_first=True)).run()
    assert r.found and r.found[0].violation.prop == "NoForwardingLoops"
    # the counterexample replays to the violation
    system = make_system(cfg)
    st = system.initial()
    for t in r.found[0].path:
        st, fx = system.fire(st, t)
    assert [v.prop for v in fx.violations] == ["NoForwardingLoops"]


def test_falls_back_to_sleep_sets_where_predictions_are_incomplete():
    # NoBlackHolesMobile watches every step and does not commute: no persistent sets
    mobile = make_system(build_config("app:pyswitch", scenario="mobile", pings=1))
    r = Explorer(mobile, SearchOptions(dpor=True)).run()
    assert "persistent sets not applied" in r.dpor_note and "NoBlackHolesMobile" in r.dpor_note
    faults = make_system(build_config("app:pyswitch", scenario="pings", pings=1, faults=("drop",)))
    r = Explorer(faults, SearchOptions(dpor=True)).run()
    assert "faults" in r.dpor_note and r.completed
    depth = Explorer(_pyswitch(scenario="pings", pings=2)(), SearchOptions(dpor=True, max_depth=6)).run()
    assert "depth bound" in depth.dpor_note


def _all_states(system, limit):
    st0 = system.initial()
    seen = {st0.hash(): st0}
    todo = [st0]
    while todo and len(seen) < limit:
        st = todo.pop()
        for t in system.enabled(st):
            c, fx = system.fire(st, t)
            if not fx.violations and c.hash() not in seen:
                seen[c.hash()] = c
                todo.append(c)
    return [seen[h] for h in sorted(seen)]


def _props(fx):
    return sorted(v.prop for v in fx.violations)


def _check_persistence(system, st, depth):
    """Brute force: every transition outside P that can run before P commutes with every member of P."""
    en = system.enabled(st)
    p_set = Stubborn(system).persistent(st, en)
    if len(p_set) == len(en):
        return 0
    in_p = {_name(t) for t in p_set}
    frontier = [st]
    checked = 0
    for _ in range(depth):
        nxt = []
        for s in frontier:
            en_s = system.enabled(s)
            for p in p_set:
                assert p in en_s, f"{p} was disabled by transitions outside the persistent set"
            for u in en_s:
                if _name(u) in in_p:
                    continue
                su, fu = system.fire(s, u)
                for p in p_set:
                    sp, fp = system.fire(s, p)
                    assert u in system.enabled(sp) and p in system.enabled(su)
                    spu, fpu = system.fire(sp, u)
                    sup, fup = system.fire(su, p)
                    assert spu.hash() == sup.hash(), f"{u} and {p} do not commute"
                    # A commuting property may report a violation at either of the two
                    # (FlowAffinity: whichever replica gets the connection second); what
                    # must not change is which properties the pair violates.
                    assert set(_props(fp) + _props(fpu)) == set(_props(fu) + _props(fup))
                    checked += 1
                if not fu.violations:
                    nxt.append(su)
        frontier = nxt
    return checked


@pytest.mark.parametrize("name,limit,depth", [("pings2", 400, 3), ("bug-ix-pktseq2", 300, 3),
                                              ("mobile2", 300, 2), ("bug-ix-bug", 300, 2),
                                              ("linear3-cross", 300, 2), ("direct2", 300, 3),
                                              ("bug-xiii-bug", 200, 2)])
def test_predicted_persistent_sets_are_persistent(name, limit, depth):
    make, _ = MODELS[name]
    system = make()
    checked = sum(_check_persistence(system, st, depth) for st in _all_states(system, limit))
    assert checked > 0  # the model has states where P is a proper subset


@pytest.mark.real
def test_osken_simple_switch_mobile_with_persistent_sets():
    """The real os-ken simple_switch (in its own process): same end states and violations, fewer states."""
    from netsleuth.nice.osken_host import load_osken_app, shutdown_servers
    from netsleuth.nice.property_registry import resolve
    from netsleuth.nice.system import System

    spec = "osken:os_ken.app.simple_switch"
    cls = load_osken_app(spec)
    try:
        cfg = build_config(spec, scenario="mobile", pings=2, properties=("NoBlackHoles",))
        full, full_ends = _search(System(cfg, cls, resolve(cfg.properties)), "full", False)
        red, red_ends = _search(System(cfg, cls, resolve(cfg.properties)), "full", True)
    finally:
        shutdown_servers()
    assert full.completed and red.completed and red.dpor_note == ""
    assert set(red.violation_counts) == set(full.violation_counts) == {"NoBlackHoles"}
    assert red_ends == full_ends
    assert red.unique_states < full.unique_states
