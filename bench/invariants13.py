#!/usr/bin/env python3
"""Per-message re-check on OpenFlow 1.3: the incremental engine beside the full check, same run.

The two-table FatTree of ``bench/invariants.py`` (table 0 an ACL, goto table 1 holding
simple_switch-style flows ``in_port, eth_src, eth_dst -> output``), then ``--updates``
random messages on random switches, in turn: a FLOW_MOD ADD of a route (random host pair,
in_port and output; now and then an output to a group), a MODIFY (strict and not) of a
random entry to a random output, a DELETE (strict and not) of a random entry, and every
tenth message a GROUP_MOD (add, modify or delete of an ALL, INDIRECT or FAST_FAILOVER
group).  For each K:

* cold: the incremental engine's first check (``IncrementalHSA13.check``: every ingress
  explored with its tree kept, the three checks) and a full check (``check_all13``,
  nothing compiled), both CPU seconds;
* per message: CPU ms of ``IncrementalHSA13.flow_mod`` / ``group_mod`` (median, p99, max);
* full re-check: CPU ms of a full check (nothing compiled, nothing remembered) of the
  same view every ``--compare-every`` messages and after the last; its findings must
  equal the incremental ones in order and in every detail.

CPU time (``time.process_time``), not wall time: the machine is shared.  Writes
``bench/results/invariants13.json``.

    .venv/bin/python bench/invariants13.py                  # K = 4, 8
    .venv/bin/python bench/invariants13.py --ks 8 --updates 1000
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from os_ken.ofproto import ofproto_v1_3 as ofp  # noqa: E402

from netsleuth.invariants.headerspace.of13 import engine as E13  # noqa: E402
from netsleuth.invariants.headerspace.of13.checks import check_all13  # noqa: E402
from netsleuth.invariants.headerspace.of13.incremental import KINDS, IncrementalHSA13  # noqa: E402
from netsleuth.model.of13.actions import Group, Output  # noqa: E402
from netsleuth.model.of13.errors import OFError  # noqa: E402
from netsleuth.model.of13.groups import Bucket  # noqa: E402
from netsleuth.model.of13.instructions import Instructions  # noqa: E402
from netsleuth.model.of13.oxm import OxmMatch  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "invariants13.json"
_spec = importlib.util.spec_from_file_location("bench_invariants", ROOT / "bench" / "invariants.py")
B = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(B)  # type: ignore[union-attr]


def _texts(found: dict) -> dict:
    return {k: [(f.message, f.hosts, f.switches, repr(sorted(f.details.items()))) for f in found[k]] for k in KINDS}


def _full(view: Any) -> dict:
    E13.forget13()
    return check_all13(view, cache=False)


def _message(rng: random.Random, step: int, pipes: dict, hosts: list) -> tuple[str, str, Any] | None:
    """Apply one message (see the module docstring); (switch, kind, what the engine is told)."""
    name = rng.choice(sorted(pipes))
    pipe = pipes[name]
    ports = sorted(pipe.ports)
    try:
        if step % 10 == 0:
            gid = rng.choice([1, 2])
            cmd = rng.choice(["add", "modify", "delete"])
            if cmd == "delete":
                pipe.delete_group(gid)
                return name, "group", (gid, True)
            gtype = rng.choice([ofp.OFPGT_ALL, ofp.OFPGT_INDIRECT, ofp.OFPGT_FF])
            outs = rng.sample(ports, 1 if gtype == ofp.OFPGT_INDIRECT else 2)
            (pipe.add_group if cmd == "add" else pipe.modify_group)(
                gid, gtype, [Bucket((Output(p),), watch_port=p) for p in outs])
            return name, "group", (gid, False)
        groups = sorted(pipe.groups.groups)
        kind = step % 3
        if kind == 0 or not len(pipe.tables):
            src, dst = rng.sample(hosts, 2)
            m = OxmMatch.build(in_port=rng.choice(ports), eth_src=src.mac, eth_dst=dst.mac)
            act = Group(rng.choice(groups)) if groups and rng.random() < 0.1 else Output(rng.choice(ports))
            pipe.add_flow(1, m, 1, Instructions.actions(act))
            return name, "flow", (1, m)
        e = rng.choice(pipe.tables.entries())
        strict = step % 2 == 0
        if kind == 1:
            pipe.modify_flows(e.table_id, e.match, Instructions.actions(Output(rng.choice(ports))), strict=strict,
                              priority=e.priority)
        else:
            pipe.tables.delete(e.table_id, e.match, strict=strict, priority=e.priority)
        return name, "flow", (e.table_id, e.match)
    except OFError:
        return None


def run_k(k: int, updates: int, compare_every: int, seed: int) -> dict:
    topo, switches10, _info = B.build_fattree(k)
    pipes = B.build_fattree13(k, topo, switches10)
    hosts = list(topo.hosts)
    view = B.make_view13(topo, pipes)
    t0 = time.process_time()
    _full(view)
    full_cold = time.process_time() - t0
    inc = IncrementalHSA13()
    t0 = time.process_time()
    inc.check(B.make_view13(topo, pipes))
    inc_cold = time.process_time() - t0
    rng = random.Random(seed)
    times: list[float] = []
    full: list[float] = []
    kinds = {"flow": 0, "group": 0}
    step = 0
    got: dict = {}
    while len(times) < updates:
        step += 1
        msg = _message(rng, step, pipes, hosts)
        if msg is None:
            continue
        name, kind, what = msg
        kinds[kind] += 1
        view = B.make_view13(topo, pipes)
        t0 = time.process_time()
        got = inc.flow_mod(view, name, *what) if kind == "flow" else inc.group_mod(view, name, *what)
        times.append(time.process_time() - t0)
        if len(times) % compare_every == 0 or len(times) == updates:
            t0 = time.process_time()
            want = _full(view)
            full.append(time.process_time() - t0)
            assert _texts(got) == _texts(want), \
                f"message {len(times)}: the incremental findings differ from a full check's"
    row = {"k": k, "rules": sum(len(p.tables) for p in pipes.values()), "updates": updates, "kinds": kinds,
           "inc_cold_s": round(inc_cold, 3), "full_cold_s": round(full_cold, 3), "compared_with_full": len(full),
           "hops_rerun": inc.rerun, "partial_checks": inc.partial_checks, "full_checks": inc.full_checks,
           "findings_at_end": {kk: len(got.get(kk, ())) for kk in KINDS}}
    if not times:  # --updates 0: the cold checks only
        return row | {"median_ms": None, "p99_ms": None, "max_ms": None, "mean_ms": None,
                      "full_recheck_median_ms": None, "speedup": None}
    times.sort()
    full.sort()
    median = times[len(times) // 2]
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    full_median = full[len(full) // 2]
    return row | {"median_ms": round(median * 1e3, 3), "p99_ms": round(p99 * 1e3, 3),
                  "max_ms": round(times[-1] * 1e3, 3), "mean_ms": round(sum(times) / len(times) * 1e3, 3),
                  "full_recheck_median_ms": round(full_median * 1e3, 3),
                  "speedup": round(full_median / max(median, 1e-9), 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ks", default="4,8", help="FatTree sizes, comma-separated (default 4,8)")
    ap.add_argument("--updates", type=int, default=1000, help="random messages per K (default 1000)")
    ap.add_argument("--compare-every", type=int, default=100,
                    help="a full re-check (timed, findings compared) every this many messages (default 100)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random messages (default 1)")
    ap.add_argument("--out", type=Path, default=RESULTS, help=f"JSON results (default {RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    try:
        ks = [int(x) for x in args.ks.split(",") if x.strip()]
    except ValueError:
        print(f"error: --ks {args.ks!r} is not a list of integers -- fix: give e.g. --ks 4,8", file=sys.stderr)
        return 2
    from rich.console import Console
    from rich.table import Table

    rows = []
    for k in ks:
        rows.append(run_k(k, args.updates, args.compare_every, args.seed))
    table = Table(title="OpenFlow 1.3 two-table FatTree: incremental re-check per message vs full re-check (CPU)")
    for col in ("K", "rules", "msgs", "cold inc s", "cold full s", "median ms", "p99 ms", "max ms",
                "full re-check ms", "speedup"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["k"]), str(r["rules"]), str(r["updates"]), str(r["inc_cold_s"]), str(r["full_cold_s"]),
                      *("-" if r[c] is None else str(r[c]) for c in ("median_ms", "p99_ms", "max_ms",
                                                                       "full_recheck_median_ms")),
                      f"{r['speedup']}x" if r["speedup"] is not None else "-")
    Console().print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"python": platform.python_version(), "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
