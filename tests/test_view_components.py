"""``NetworkView.live_components`` (found without building a graph) numbers the components of
``live_graph`` exactly as ``networkx.connected_components`` does, on FatTrees with links and
switches taken down at random (from none to most of them)."""

from __future__ import annotations

import importlib.util
import pathlib
import random

import networkx as nx

_SPEC = importlib.util.spec_from_file_location(
    "bench_invariants", pathlib.Path(__file__).resolve().parents[1] / "bench" / "invariants.py")
bench = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(bench)  # type: ignore[union-attr]


def test_components_as_networkx_numbers_them() -> None:
    sizes = set()
    for k in (4, 6):
        topo, switches10, _info = bench.build_fattree(k)
        pipes = bench.build_fattree13(k, topo, switches10)
        rng = random.Random(k)
        for trial in range(120):
            view = bench.make_view13(topo, pipes)
            for key in sorted(view.link_up):
                if rng.random() < trial / 150:
                    view.link_up[key] = False
            for s in topo.switches:
                if rng.random() < 0.05:
                    view.switch_up[s.name] = False
            want = {n: i for i, c in enumerate(nx.connected_components(view.live_graph())) for n in c}
            assert view.live_components() == want
            sizes.add(len(set(want.values())))
    assert min(sizes) == 1 and max(sizes) > 20   # whole networks and ones cut to pieces
