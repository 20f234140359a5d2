"""The cost of `netsleuth fuzz --check-every-flowmod`: seconds per run with and without, in the same run.

Each configuration (a real controller on a topology: os-ken simple_switch
over OpenFlow 1.0, simple_switch_13 over 1.3, Faucet over 1.3) is fuzzed for
``--steps`` rounds under host moves, link failures and traffic
(``--keep-going``, so every run lasts all its rounds), once per seed without
the option and once with it, alternating so that load on the machine falls
on both alike.  Printed per configuration: wall seconds per run without and
with, the difference, the FLOW_MODs checked, the seconds the per-message
checks took in all (the option's own work, apart from the waiting a round
does anyway) and per FLOW_MOD.  A run's wall time is mostly the rounds'
fixed waits (``--round-seconds``), so the difference is what a user waits
longer; seconds per FLOW_MOD is what grows with the network.  Both runs of a
seed must report the same persistent invariants (the option only names
causes).  Writes bench/results/fuzz_every_flowmod.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.schedulers.fuzz import Rates

RESULTS = Path(__file__).resolve().parent / "results" / "fuzz_every_flowmod.json"
CONTROLLERS = {"ss10": ("osken:os_ken.app.simple_switch", "1.0"),
               "ss13": ("osken:os_ken.app.simple_switch_13", "1.3"),
               "faucet": ("faucet:auto", "1.3")}
RATES = {"host_migration": 0.05, "link_failure": 0.02, "link_recovery": 0.3, "traffic": 0.5,
         "switch_failure": 0.0, "switch_recovery": 0.0}
DEFAULT_CONFIGS = "ss10:linear,3;ss13:linear,3;ss10:linear,8;ss13:linear,8;faucet:linear,3"


def one_run(name: str, topo: str, seed: int, steps: int, every: bool, out: Path) -> dict:
    controller, openflow = CONTROLLERS[name]
    t = time.monotonic()
    d = fuzz(FuzzOptions(controller, topo, out, steps=steps, seed=seed, rates=Rates(dict(RATES)), persist=3,
                         keep_going=True, openflow=openflow, check_every_flowmod=every)).data
    wall = time.monotonic() - t
    return {"wall_s": wall, "steps": d["steps"], "stats": d.get("every_flowmod") or {},
            "persistent": sorted({v["invariant"] for v in d["violations"] if v["persistent"]})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help=f"controller:topology, ';'-separated; controllers: {', '.join(CONTROLLERS)}")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    console = Console()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for cfg in args.configs.split(";"):
            name, _, topo = cfg.partition(":")
            runs: dict[bool, list[dict]] = {False: [], True: []}
            for seed in range(1, args.seeds + 1):
                for every in (False, True) if seed % 2 else (True, False):
                    runs[every].append(one_run(name, topo, seed, args.steps, every,
                                               Path(tmp) / f"{name}-{topo}-{seed}-{int(every)}"))
            plain, checked = runs[False], runs[True]
            flow_mods = sum(r["stats"].get("flow_mods", 0) for r in checked)
            check_s = sum(r["stats"].get("check_seconds", 0.0) for r in checked)
            row = {"controller": name, "topology": topo, "openflow": CONTROLLERS[name][1], "seeds": args.seeds,
                   "steps": args.steps,
                   "without_s_per_run": round(sum(r["wall_s"] for r in plain) / len(plain), 2),
                   "with_s_per_run": round(sum(r["wall_s"] for r in checked) / len(checked), 2),
                   "flow_mods_per_run": round(flow_mods / len(checked), 1),
                   "check_s_per_run": round(check_s / len(checked), 3),
                   "ms_per_flow_mod": round(check_s / max(1, flow_mods) * 1000, 3),
                   "same_findings": [a["persistent"] for a in plain] == [b["persistent"] for b in checked],
                   "persistent_without": [r["persistent"] for r in plain],
                   "persistent_with": [r["persistent"] for r in checked],
                   "stats_with": [r["stats"] for r in checked]}
            row["extra_s_per_run"] = round(row["with_s_per_run"] - row["without_s_per_run"], 2)
            rows.append(row)
            console.print(f"{name} {topo}: {row['without_s_per_run']} s -> {row['with_s_per_run']} s per run, "
                          f"{row['flow_mods_per_run']} FLOW_MODs, {row['ms_per_flow_mod']} ms each")
    table = Table(title=f"fuzz --check-every-flowmod ({args.seeds} seeds x {args.steps} rounds, same run)")
    for col in ("controller", "topology", "OF", "s/run without", "s/run with", "extra s/run", "FLOW_MODs/run",
                "check s/run", "ms/FLOW_MOD", "same findings"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["controller"], r["topology"], r["openflow"], str(r["without_s_per_run"]),
                      str(r["with_s_per_run"]), str(r["extra_s_per_run"]), str(r["flow_mods_per_run"]),
                      str(r["check_s_per_run"]), str(r["ms_per_flow_mod"]), "yes" if r["same_findings"] else "no")
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "rates": RATES}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
