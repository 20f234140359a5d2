"""The model checker's counterexamples localized: counterexample and seeded random walks as the spectrum.

NICE's load balancer bug V ignores every TCP packet_in caused by a table miss
(``if reason == OFPR_NO_MATCH: return`` in its handle_tcp): walks where the
first policy was installed before the SYN arrived pass, the others fail, and
the ``return`` that drops the packet must rank first.  Bug IV forgets every
ARP request it is sent, so no walk passes: no ranking, and the reason.
"""

from __future__ import annotations

import inspect

from netsleuth.localize.source import function_of, line_text
from netsleuth.nice import bug_scenarios as bs
from netsleuth.nice.apps import loadbalancer as lb
from netsleuth.nice.localize import LineTracer, localize_counterexample


def _localize(bug: str, walks: int = 40):
    sc = bs.get(bug)
    _, result = bs.run(sc)
    found = result.found[0]
    return localize_counterexample(lambda: bs.build_system(sc), [inspect.getsourcefile(lb)], found.path,
                                   found.violation.prop, walks=walks, seed=0)


def test_bug_v_ranks_the_return_that_ignores_a_table_miss_first():
    ps = _localize("V")
    r = ps.ranking
    assert r.separable and r.failing >= 2 and r.passing >= 2, (r.failing, r.passing)
    first = r.lines[0]
    assert function_of(first.file, first.line) == "LoadBalancerBugV.handle_tcp"
    assert line_text(first.file, first.line) == "return"
    assert line_text(first.file, first.line - 1) == "if reason == ofp.OFPR_NO_MATCH:"
    assert ps.runs[0].violated == {"NoForgottenPackets"}          # the counterexample, replayed, still fails
    assert first.counts.ep == 0 and first.counts.ef == r.failing   # every failing path and no passing one ran it


def test_the_same_seed_gives_the_same_spectrum():
    a, b = _localize("V", walks=10), _localize("V", walks=10)
    assert [(x.path, x.lines, x.violated) for x in a.runs] == [(x.path, x.lines, x.violated) for x in b.runs]


def test_a_bug_every_path_hits_cannot_be_ranked():
    r = _localize("IV", walks=10).ranking
    assert not r.separable and r.passing == 0 and "no replay passed" in r.reason


def test_the_tracer_sees_only_the_files_it_is_given():
    with LineTracer([inspect.getsourcefile(lb)]) as t:
        lb.block_of(0x0A000001)
        inspect.getsourcefile(lb)
    assert t.lines and {f for f, _ in t.lines} == {inspect.getsourcefile(lb)}


def test_check_localize_names_the_line_in_result_json(tmp_path, capsys):
    import json

    from netsleuth.cli import main

    assert main(["check", "loadbalancer", "--variant", "bug-vii", "--stop-at-first", "--localize", "20",
                 "--out", str(tmp_path)]) == 1
    loc = json.loads((tmp_path / "result.json").read_text())["localize"]
    assert loc["separable"] and loc["runs"] == 21 and loc["property"] == "NoForgottenPackets"
    first = loc["top"][0]
    assert (first["function"], first["source"], first["passing"]) == ("LoadBalancerBugVII.handle_tcp", "return", 0)
    assert "suspicious lines" in capsys.readouterr().out
