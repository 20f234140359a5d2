"""Fault localization on seeded faults: does `minimize --localize` name the faulty line?

For each fault: copy a controller app from its installed package, change one
line (the seeded fault), fuzz the copy (short, seeded) until a persistent
violation, minimize with --localize, and record the rank of the faulty line
under each formula.  Also measures what coverage costs: one trace replayed
with and without it.  Writes bench/results/localize.json.

    PYTHONPATH=. .venv/bin/python bench/localize.py [--faults NAME,...] [--overhead-times 3] [--jobs 1]

Each fault's row is written to the results file as soon as it is done, so
an interrupted run keeps the faults it finished.  ``auto``: the faulty
line's rank in the spectrum localize chose (handler calls or whole replays).

Extend :data:`FAULTS`: a fault names its app (module of the controller
environment), the exact text of one line and what it becomes, and the fuzz
settings that bring the violation out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from netsleuth.controllers.external import find_controller_python
from netsleuth.errors import NetsleuthError
from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.localize import LocalizeOptions, ranked
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.jobs.replay import ReplayOptions, replay
from netsleuth.localize.collect import load_runs, load_window_runs
from netsleuth.localize.source import by_statement, execution_order, statement_of
from netsleuth.localize.spectrum import FORMULAS, rank
from netsleuth.schedulers.fuzz import Rates

RESULTS = Path(__file__).resolve().parent / "results" / "localize.json"
TRAFFIC = {"traffic": 0.5, "host_migration": 0.0, "switch_failure": 0.0, "link_failure": 0.0}


@dataclass(frozen=True)
class Fault:
    name: str
    module: str              # the app: a module of the controller environment, or a file of this checkout
    old: str                 # one line of its source, stripped, exactly as it is
    new: str                 # what the seeded fault makes of it
    kind: str = "osken"      # the spec kind the copy runs as
    topo: str = "linear,3"
    steps: int = 60
    rates: dict = field(default_factory=lambda: dict(TRAFFIC))
    seeds: tuple[int, ...] = (1, 2, 3)
    what: str = ""
    occurrence: int | None = None  # which of several identical lines (0-based); None: it must be unique


MOVING = "tests/data/localize/moving_switch.py"
SS, SS13 = "os_ken.app.simple_switch", "os_ken.app.simple_switch_13"
RYU = "ryu-4.34:simple_switch.py"              # Ryu's release, from PyPI (see :func:`ryu_release`)
POX_L2 = "pox-gar:pox/forwarding/l2_learning.py"  # a file of the POX gar checkout
MIGRATIONS = {"host_migration": 0.03, "traffic": 0.3}

FAULTS: tuple[Fault, ...] = (
    Fault("mv-guard-flipped", MOVING, "if msg.reason != ofp.OFPPR_DELETE:", "if msg.reason == ofp.OFPPR_DELETE:",
          steps=300, rates=dict(MIGRATIONS), what="a flipped comparison: handles every port change but deletion"),
    Fault("mv-forget-others", MOVING, "gone = [mac for mac, port in table.items() if port == msg.desc.port_no]",
          "gone = [mac for mac, port in table.items() if port != msg.desc.port_no]", steps=300,
          rates=dict(MIGRATIONS), what="a flipped comparison: forgets the hosts that stayed, keeps the one that left"),
    Fault("mv-keep-mac", MOVING, "self.where.get(dpid, {}).pop(mac, None)", "pass", steps=300,
          rates=dict(MIGRATIONS), what="deletes the flows to a moved host but still knows it at its old port"),
    Fault("mv-skip-first", MOVING, "for mac in gone:", "for mac in gone[1:]:", steps=300, rates=dict(MIGRATIONS),
          what="an off-by-one: forgets all but the first host of a deleted port"),
    Fault("mv-delete-by-src", MOVING,
          "dp.send_msg(parser.OFPFlowMod(datapath=dp, match=parser.OFPMatch(dl_dst=haddr_to_bin(mac)), cookie=0,",
          "dp.send_msg(parser.OFPFlowMod(datapath=dp, match=parser.OFPMatch(dl_src=haddr_to_bin(mac)), cookie=0,",
          steps=300, rates=dict(MIGRATIONS), what="deletes the flows from a moved host instead of those to it"),
    Fault("mv-wrong-reason", MOVING, "if msg.reason != ofp.OFPPR_DELETE:", "if msg.reason != ofp.OFPPR_MODIFY:",
          steps=300, rates=dict(MIGRATIONS), what="a wrong constant: waits for a port modification, not a deletion"),
    Fault("mv-no-forget", MOVING, "self.forget(mac)", "pass", steps=300, rates=dict(MIGRATIONS),
          what="a deleted statement: the missing flow delete (a moved host's flows stay)"),
    Fault("mv-delete-strict", MOVING, "command=dp.ofproto.OFPFC_DELETE, actions=[]))",
          "command=dp.ofproto.OFPFC_DELETE_STRICT, actions=[]))", steps=300, rates=dict(MIGRATIONS),
          what="a wrong constant: a strict delete of a match no flow has deletes nothing"),
    Fault("mv-first-switch-only", MOVING, "for dpid, dp in sorted(self.datapaths.items()):",
          "for dpid, dp in sorted(self.datapaths.items())[:1]:", steps=300, rates=dict(MIGRATIONS),
          what="an off-by-one: forgets the moved host on the first switch only"),
    # os-ken's simple_switch (OpenFlow 1.0), unmodified but for the one line
    Fault("ss-wrong-out-port", SS, "out_port = self.mac_to_port[dpid][dst]",
          "out_port = msg.in_port", what="forwards a known destination back out of the port it came in on"),
    Fault("ss-wrong-key", SS, "out_port = self.mac_to_port[dpid][dst]",
          "out_port = self.mac_to_port[dpid][src]", what="looks up the source's port for the destination"),
    Fault("ss-learn-constant", SS, "self.mac_to_port[dpid][src] = msg.in_port",
          "self.mac_to_port[dpid][src] = 1", what="a wrong constant: learns every host at port 1"),
    Fault("ss-swapped-match", SS, "dl_dst=haddr_to_bin(dst), dl_src=haddr_to_bin(src))",
          "dl_dst=haddr_to_bin(src), dl_src=haddr_to_bin(dst))", what="the flow matches the reverse direction"),
    Fault("ss-no-packet-out", SS, "datapath.send_msg(out)", "pass",
          what="a deleted statement: the packet-in's packet is never sent on"),
    Fault("ss-action-in-port", SS, "actions = [datapath.ofproto_parser.OFPActionOutput(out_port)]",
          "actions = [datapath.ofproto_parser.OFPActionOutput(msg.in_port)]",
          what="every action sends the packet back where it came from"),
    Fault("ss-flipped-known", SS, "if dst in self.mac_to_port[dpid]:", "if dst not in self.mac_to_port[dpid]:",
          what="a flipped comparison: floods known destinations, looks up unknown ones"),
    Fault("ss-flood-constant", SS, "out_port = ofproto.OFPP_FLOOD", "out_port = ofproto.OFPP_IN_PORT",
          what="a wrong constant: an unknown destination goes back out of its in port"),
    Fault("ss-port-plus-one", SS, "out_port = self.mac_to_port[dpid][dst]",
          "out_port = self.mac_to_port[dpid][dst] + 1", what="a wrong constant: the port next to the learned one"),
    Fault("ss-learn-dst", SS, "self.mac_to_port[dpid][src] = msg.in_port",
          "self.mac_to_port[dpid][dst] = msg.in_port", what="learns the destination at the source's port"),
    # os-ken's simple_switch_13 (OpenFlow 1.3)
    Fault("ss13-wrong-out-port", SS13, "out_port = self.mac_to_port[dpid][dst]",
          "out_port = in_port", what="1.3: forwards a known destination back to its in port"),
    Fault("ss13-wrong-key", SS13, "out_port = self.mac_to_port[dpid][dst]",
          "out_port = self.mac_to_port[dpid][src]", what="1.3: looks up the source's port for the destination"),
    Fault("ss13-learn-constant", SS13, "self.mac_to_port[dpid][src] = in_port",
          "self.mac_to_port[dpid][src] = 1", what="1.3: a wrong constant: learns every host at port 1"),
    Fault("ss13-swapped-match", SS13, "match = parser.OFPMatch(in_port=in_port, eth_dst=dst, eth_src=src)",
          "match = parser.OFPMatch(in_port=in_port, eth_dst=src, eth_src=dst)",
          what="1.3: the flow matches the reverse direction"),
    Fault("ss13-no-packet-out", SS13, "datapath.send_msg(out)", "pass",
          what="1.3: a deleted statement: the packet-in's packet is never sent on"),
    Fault("ss13-action-in-port", SS13, "actions = [parser.OFPActionOutput(out_port)]",
          "actions = [parser.OFPActionOutput(in_port)]", what="1.3: every action sends the packet back"),
    Fault("ss13-flood-constant", SS13, "out_port = ofproto.OFPP_FLOOD", "out_port = ofproto.OFPP_IN_PORT",
          what="1.3: a wrong constant: an unknown destination goes back out of its in port"),
    Fault("ss13-table-miss-drop", SS13, "self.add_flow(datapath, 0, match, actions)", "pass",
          what="1.3: a deleted statement: no table-miss flow, so no packet ever reaches the controller"),
    Fault("ss13-port-plus-one", SS13, "out_port = self.mac_to_port[dpid][dst]",
          "out_port = self.mac_to_port[dpid][dst] + 1", what="1.3: the port next to the learned one"),
    Fault("ss13-learn-dst", SS13, "self.mac_to_port[dpid][src] = in_port",
          "self.mac_to_port[dpid][dst] = in_port", what="1.3: learns the destination at the source's port"),
    # Ryu 4.34's simple_switch.py as released, run through ryu:
    Fault("ryu-wrong-out-port", RYU, "out_port = self.mac_to_port[dpid][dst]", "out_port = msg.in_port",
          kind="ryu", what="Ryu: forwards a known destination back out of the port it came in on"),
    Fault("ryu-wrong-key", RYU, "out_port = self.mac_to_port[dpid][dst]", "out_port = self.mac_to_port[dpid][src]",
          kind="ryu", what="Ryu: looks up the source's port for the destination"),
    Fault("ryu-learn-constant", RYU, "self.mac_to_port[dpid][src] = msg.in_port",
          "self.mac_to_port[dpid][src] = 1", kind="ryu", what="Ryu: learns every host at port 1"),
    Fault("ryu-swapped-match", RYU, "dl_dst=haddr_to_bin(dst), dl_src=haddr_to_bin(src))",
          "dl_dst=haddr_to_bin(src), dl_src=haddr_to_bin(dst))", kind="ryu",
          what="Ryu: the flow matches the reverse direction"),
    Fault("ryu-no-packet-out", RYU, "datapath.send_msg(out)", "pass", kind="ryu",
          what="Ryu: a deleted statement: the packet-in's packet is never sent on"),
    Fault("ryu-flipped-known", RYU, "if dst in self.mac_to_port[dpid]:", "if dst not in self.mac_to_port[dpid]:",
          kind="ryu", what="Ryu: a flipped comparison"),
    Fault("ryu-port-plus-one", RYU, "out_port = self.mac_to_port[dpid][dst]",
          "out_port = self.mac_to_port[dpid][dst] + 1", kind="ryu", what="Ryu: the port next to the learned one"),
    Fault("ryu-learn-dst", RYU, "self.mac_to_port[dpid][src] = msg.in_port",
          "self.mac_to_port[dpid][dst] = msg.in_port", kind="ryu", what="Ryu: learns the destination"),
    # POX gar's forwarding.l2_learning, as a component of its own in ext/
    Fault("pox-learn-dst", POX_L2, "self.macToPort[packet.src] = event.port # 1",
          "self.macToPort[packet.dst] = event.port # 1", kind="pox",
          what="POX: learns the destination's address at the source's port"),
    Fault("pox-wrong-out-port", POX_L2, "msg.actions.append(of.ofp_action_output(port = port))",
          "msg.actions.append(of.ofp_action_output(port = event.port))", kind="pox",
          what="POX: the flow sends a known destination back out of its in port"),
    Fault("pox-same-port-flipped", POX_L2, "if port == event.port: # 5", "if port != event.port: # 5", kind="pox",
          what="POX: a flipped comparison: drops every packet to a known destination"),
    Fault("pox-no-flood", POX_L2, "msg.actions.append(of.ofp_action_output(port = of.OFPP_FLOOD))", "pass",
          kind="pox", what="POX: a deleted statement: floods send nothing"),
    Fault("pox-hold-down-flipped", POX_L2,
          "if time.time() - self.connection.connect_time >= _flood_delay:",
          "if time.time() - self.connection.connect_time < _flood_delay:", kind="pox",
          what="POX: a flipped comparison: never floods once the hold-down is over"),
    Fault("pox-known-flipped", POX_L2, "if packet.dst not in self.macToPort: # 4",
          "if packet.dst in self.macToPort: # 4", kind="pox",
          what="POX: a flipped comparison: floods known destinations, looks up unknown ones"),
    Fault("pox-learn-constant", POX_L2, "self.macToPort[packet.src] = event.port # 1",
          "self.macToPort[packet.src] = 1 # 1", kind="pox", what="POX: learns every host at port 1"),
    Fault("pox-match-all", POX_L2, "msg.match = of.ofp_match.from_packet(packet, event.port)",
          "msg.match = of.ofp_match()", kind="pox", what="POX: the flow for one destination matches every packet"),
    Fault("pox-port-plus-one", POX_L2, "port = self.macToPort[packet.dst]", "port = self.macToPort[packet.dst] + 1",
          kind="pox", what="POX: the port next to the learned one"),
    Fault("pox-action-plus-one", POX_L2, "msg.actions.append(of.ofp_action_output(port = port))",
          "msg.actions.append(of.ofp_action_output(port = port + 1))", kind="pox",
          what="POX: the flow's output is the port next to the learned one"),
    Fault("pox-port-constant", POX_L2, "port = self.macToPort[packet.dst]", "port = 1", kind="pox",
          what="POX: a wrong constant: every known destination is sent to port 1"),
    Fault("pox-no-send", POX_L2, "self.connection.send(msg)", "pass", kind="pox", occurrence=0,
          what="POX: a deleted statement: the flood's packet-out is never sent"),
)


POX_TARBALL = "pox-gar-5f82461.tar.gz"


def pox_tarball() -> Path:
    """POX gar's tarball, in ``shared/controllers/`` beside the checkout (any ancestor: a worktree finds it too)."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "controllers" / POX_TARBALL).is_file():
            return parent / "shared" / "controllers" / POX_TARBALL
    raise SystemExit(f"POX gar not found: set NETSLEUTH_POX to a checkout or put {POX_TARBALL} in shared/controllers/")


def ryu_release(work: Path) -> Path:
    """Ryu 4.34's sdist from PyPI, unpacked once under ``work``: its sample apps as released."""
    root = work / "ryu-4.34"
    if not (root / "ryu" / "app").is_dir():
        work.mkdir(parents=True, exist_ok=True)
        constraint = work / "build-constraint.txt"
        constraint.write_text("setuptools<60\n")   # Ryu 4.34's setup.py needs an old setuptools for its metadata
        subprocess.run([sys.executable, "-m", "pip", "download", "ryu==4.34", "--no-deps", "--no-binary", "ryu",
                        "--build-constraint", str(constraint), "-d", str(work)], check=True, capture_output=True)
        with tarfile.open(work / "ryu-4.34.tar.gz") as tar:
            tar.extractall(work, members=[m for m in tar.getmembers() if m.name.startswith("ryu-4.34/ryu/app/")])
    return root / "ryu" / "app"


def pox_checkout(work: Path) -> Path:
    """A private copy of POX gar (seeded components go into its ext/): $NETSLEUTH_POX's or the tarball's."""
    home = work / "pox-gar" / "pox"
    if not (home / "pox.py").is_file():
        env = os.environ.get("NETSLEUTH_POX")
        if env and (Path(env) / "pox.py").is_file():
            shutil.copytree(env, home)
        else:
            with tarfile.open(pox_tarball()) as tar:
                tar.extractall(work / "pox-gar")
    return home


def app_source(module: str, work: Path) -> Path:
    if module.startswith("ryu-4.34:"):
        return ryu_release(work) / module.partition(":")[2]
    if module.startswith("pox-gar:"):
        return pox_checkout(work) / module.partition(":")[2]
    if module.endswith(".py"):
        return Path(__file__).resolve().parents[1] / module
    py = find_controller_python()
    code = f"import importlib.util; print(importlib.util.find_spec({module!r}).origin)"
    done = subprocess.run([py, "-c", code], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def seed_fault(fault: Fault, folder: Path, shared: Path) -> tuple[Path, int, str]:
    """Write the app with the fault seeded; the file, the faulty line's number and the controller spec.

    A POX component goes into the ext/ folder of the private POX checkout under ``shared`` (POX
    runs components from there, and netsleuth counts ext/ as the controller's own code)."""
    lines = app_source(fault.module, shared).read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip() == fault.old]
    if fault.occurrence is None and len(hits) != 1 or fault.occurrence is not None and len(hits) <= fault.occurrence:
        raise SystemExit(f"fault {fault.name}: {fault.old!r} is on {len(hits)} lines of {fault.module}")
    i = hits[fault.occurrence or 0]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = f"{indent}{fault.new}\n"
    name = fault.name.replace("-", "_")
    if fault.kind == "pox":
        os.environ["NETSLEUTH_POX"] = str(pox_checkout(shared))
        folder = pox_checkout(shared) / "ext"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text("".join(lines))
    spec = f"pox:{name}" if fault.kind == "pox" else f"{fault.kind}:{path.resolve()}"
    return path.resolve(), i + 1, spec


def find_violation(fault: Fault, spec: str, out: Path) -> Path | None:
    for seed in fault.seeds:
        run = out / f"fuzz-{seed}"
        r = fuzz(FuzzOptions(spec, fault.topo, run, steps=fault.steps, seed=seed,
                             rates=Rates(fault.rates), record_packets=False))
        if any(v.get("persistent") for v in r.violations):
            return run / "trace.jsonl"
    return None


def run_fault(fault: Fault, work: Path, budget: float, jobs: int = 2) -> dict:
    t0 = time.monotonic()
    app, line, spec = seed_fault(fault, work / "app", work.parent)
    row: dict = {"fault": fault.name, "app": fault.module, "line": line, "old": fault.old, "new": fault.new,
                 "what": fault.what}
    trace = find_violation(fault, spec, work)
    if trace is None:
        row["outcome"] = "no violation found"
        return row
    d = run_minimize(MinimizeOptions(trace=trace, out=work / "min", controller=[spec], jobs=jobs,
                                     budget=budget, localize=True))
    if not d.get("localize"):
        row["outcome"] = "minimize wrote no localization"
        return row
    loc = d.get("localize", {})
    row.update({"inputs": [d["inputs_before"], d["inputs_after"]], "replays": d["replays"],
                "failing": loc.get("failing"), "passing": loc.get("passing"), "message": loc.get("message", "")})
    spectrum = load_runs(sorted((work / "min").glob("*/w*/*/coverage.json")))
    spectrum.runs = by_statement(spectrum.runs)   # as localize ranks: one candidate per statement
    faulty = (str(app), statement_of(str(app), line))   # a continuation line is its statement's
    order = execution_order(sorted({x for r in spectrum.runs if r.failed for x in r.lines}))
    for formula in FORMULAS:
        ranking = rank(spectrum.runs, formula, order=lambda x: order.get(x, (0, *x)))
        row[f"rank_{formula}"] = ranking.rank_of(faulty)
        row[f"block_{formula}"] = ranking.block_of(faulty)  # the lines no run tells from it, as one
    row["spectrum"] = loc.get("spectrum", "replays")   # what localize ranked with (auto)
    row["separable"] = ranking.separable   # False: localize shows no ranking, so the fault counts as missed
    windows = load_window_runs(sorted((work / "min").glob("*/w*/*/coverage.json")), d.get("target"))
    if windows is not None:
        windows.runs = by_statement(windows.runs)
    row["window_runs"] = [0, 0] if windows is None else [sum(r.failed for r in windows.runs),
                                                         sum(not r.failed for r in windows.runs)]
    for formula in FORMULAS if windows is not None else ():
        # the same replays, one run per handler call: the call that sent the violation's rule fails
        ranking = rank(windows.runs, formula, order=lambda x: order.get(x, (0, *x)))
        row[f"wrank_{formula}"] = ranking.rank_of(faulty)
        row[f"wblock_{formula}"] = ranking.block_of(faulty)
    row["wseparable"] = windows is not None and ranking.separable
    row.update(used_rank(work / "min", d.get("target"), faulty))
    row["seconds"] = round(time.monotonic() - t0, 1)
    return row


def used_rank(minimize_out: Path, target: dict | None, faulty: tuple[str, int]) -> dict:
    """The faulty line's Ochiai rank and block in the spectrum localize chose (``--spectrum auto``, the
    default: handler calls or whole replays), as localize ranks it."""
    _, kind, ranking = ranked(minimize_out, target, LocalizeOptions(minimize_out))
    return {"used_spectrum": kind, "used_separable": ranking.separable,
            "used_rank": ranking.rank_of(faulty), "used_block": ranking.block_of(faulty)}


def overhead(trace: Path, controller: str, work: Path, times: int) -> dict:
    """Wall time of replaying ``trace`` with and without coverage, alternating."""
    plain, measured = [], []
    for i in range(times):
        for cov, acc in ((False, plain), (True, measured)):
            out = work / f"overhead-{'cov' if cov else 'plain'}-{i}"
            t0 = time.monotonic()
            replay(ReplayOptions(trace=trace, out=out, controller=controller, epsilon=0.1, coverage=cov,
                                 record_packets=False))
            acc.append(time.monotonic() - t0)
    p, m = statistics.median(plain), statistics.median(measured)
    return {"trace": str(trace), "controller": controller, "times": times, "plain_s": round(p, 2),
            "coverage_s": round(m, 2), "ratio": round(m / p, 3)}


def separable(row: dict) -> bool:
    """Whether localize ranked (rows of older runs say it only in their message)."""
    return bool(row.get("separable", not row.get("message")))


def summarize(rows: list[dict]) -> dict:
    """top-1/top-5 of the faulty line (Ochiai) over the faults whose violation fuzz found; an unseparable
    spectrum is a miss."""
    ranked = [r for r in rows if "rank_ochiai" in r]
    ranks = [r["rank_ochiai"] for r in ranked if separable(r)]
    blocks = [r.get("block_ochiai") for r in ranked if separable(r)]
    n = len(ranked) or 1   # a fault no fuzz run brought out is not part of the benchmark
    top1, top5 = sum(1 for k in ranks if k == 1), sum(1 for k in ranks if k is not None and k <= 5)
    return {"faults": len(rows), "localized": len(ranked), "unseparable": sum(1 for r in ranked if not separable(r)),
            "controllers": sorted({r.get("controller", r["app"]) for r in rows}),
            "top1_ochiai": top1, "top5_ochiai": top5, "top1_share": round(top1 / n, 3),
            "top5_share": round(top5 / n, 3), "top1_block_ochiai": sum(1 for k in blocks if k == 1),
            **_window_summary(ranked), **_used_summary(ranked)}


def _used_summary(ranked: list[dict]) -> dict:
    """The counts in the spectrum localize chose itself (``auto``): what a user sees."""
    rows = [r for r in ranked if "used_rank" in r]
    ranks = [r["used_rank"] for r in rows if r.get("used_separable")]
    n = len(rows) or 1
    top1, top5 = sum(1 for k in ranks if k == 1), sum(1 for k in ranks if k is not None and k <= 5)
    return {"auto_rows": len(rows), "top1_auto": top1, "top5_auto": top5, "top1_auto_share": round(top1 / n, 3),
            "top5_auto_share": round(top5 / n, 3),
            "top1_block_auto": sum(1 for r in rows if r.get("used_separable") and r.get("used_block") == 1)}


def _window_summary(ranked: list[dict]) -> dict:
    """The same counts ranking one run per handler call (rows that recorded handler windows)."""
    ranks = [r.get("wrank_ochiai") for r in ranked if r.get("wseparable")]
    return {"windowed": sum(1 for r in ranked if "wseparable" in r),
            "top1_windows_ochiai": sum(1 for k in ranks if k == 1),
            "top5_windows_ochiai": sum(1 for k in ranks if k is not None and k <= 5)}


def table(rows: list[dict]) -> str:
    """The benchmark as a table: fault, controller, rank of the faulty line per formula over whole replays,
    its Ochiai rank with one run per handler call (``calls``) and in the spectrum localize chose (``auto``,
    with its block and the spectrum's name); top-1/top-5 marks the rank localize shows (``auto``)."""
    out = [f"{'fault':24} {'controller':16} {'ochiai':>6} {'block':>5} {'dstar':>6} {'tarant':>6}  top   "
           f"{'calls':>5}  {'auto':>4} {'block':>5} {'spectrum':13}  outcome"]
    for r in rows:
        k = r.get("rank_ochiai") if separable(r) else None
        if "used_rank" in r:   # the mark is for what localize shows: the spectrum it chose
            k = r["used_rank"] if r.get("used_separable") else None
        mark = "first" if k == 1 else "top-5" if k is not None and k <= 5 else "miss"
        out.append(f"{r['fault']:24} {r.get('controller', ''):16} {r.get('rank_ochiai') or '-':>6} "
                   f"{r.get('block_ochiai') or '-':>5} {r.get('rank_dstar') or '-':>6} "
                   f"{r.get('rank_tarantula') or '-':>6}  {mark:5} "
                   f"{(r.get('wrank_ochiai') if r.get('wseparable') else None) or '-':>5}  "
                   f"{(r.get('used_rank') if r.get('used_separable') else None) or '-':>4} "
                   f"{(r.get('used_block') if r.get('used_separable') else None) or '-':>5} "
                   f"{r.get('used_spectrum', ''):13}  {r.get('outcome', r.get('message', ''))}")
    return "\n".join(out)


def write(rows: list[dict], overhead_result: dict | None, results: Path = RESULTS) -> dict:
    order = {f.name: i for i, f in enumerate(FAULTS)}
    rows = sorted(rows, key=lambda r: order.get(r["fault"], len(order)))
    data: dict = {"faults": rows, "summary": summarize(rows)}
    if overhead_result:
        data["overhead"] = overhead_result
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--faults", help="comma-separated names (default: all)")
    ap.add_argument("--work", default="/tmp/netsleuth-bench-localize")
    ap.add_argument("--budget", type=float, default=240.0, help="minimize budget per fault, seconds")
    ap.add_argument("--overhead-times", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2, help="parallel replays per minimization (1 on a busy machine)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the other faults' rows of the last results file (run the benchmark a few at a time)")
    ap.add_argument("--only-overhead", action="store_true",
                    help="keep the faults of the last results file (and their --work folders); measure the overhead")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the JSON file to write (and --keep from)")
    ap.add_argument("--merge", nargs="+", type=Path, metavar="JSON",
                    help="only combine these results files (from runs side by side) into --results, and print")
    args = ap.parse_args(argv)
    if args.merge:
        parts = [json.loads(p.read_text()) for p in args.merge]
        rows = {r["fault"]: r for part in parts for r in part["faults"]}
        measured = next((part["overhead"] for part in parts if part.get("overhead")), None)
        data = write(list(rows.values()), measured, args.results)
        print(table(data["faults"]))
        print(json.dumps({"summary": data["summary"], "overhead": data.get("overhead")}))
        return 0
    wanted = set(args.faults.split(",")) if args.faults else None
    work = Path(args.work)
    old = json.loads(args.results.read_text()) if (args.keep or args.only_overhead) and args.results.exists() else {}
    rows = [r for r in old.get("faults", []) if args.only_overhead or (wanted is not None and r["fault"] not in wanted)]
    kinds = {"pox": "pox", "ryu": "ryu"}
    for fault in FAULTS:
        if not args.only_overhead and (wanted is None or fault.name in wanted):
            try:
                row = run_fault(fault, work / fault.name, args.budget, args.jobs)
            except NetsleuthError as exc:   # one fault's failure is its row, not the end of the benchmark
                row = {"fault": fault.name, "app": fault.module, "outcome": f"error: {exc.one_line()}"}
            row["controller"] = kinds.get(fault.kind, fault.module.rpartition(".")[2] if "." in fault.module
                                          and not fault.module.endswith(".py") else "moving_switch")
            rows.append(row)
            print(json.dumps(row), flush=True)
            write(rows, old.get("overhead"), args.results)
    ranked = [r for r in rows if "rank_ochiai" in r]
    source = next((r for r in ranked), None)
    measured = old.get("overhead")
    if args.overhead_times and source is not None:  # the fuzz trace that minimization started from
        fault = next(f for f in FAULTS if f.name == source["fault"])
        spec = seed_fault(fault, work / "overhead" / "app", work)[2]
        trace = sorted((work / source["fault"]).glob("fuzz-*/trace.jsonl"))[-1]
        measured = overhead(trace, spec, work / "overhead", args.overhead_times)
    data = write(rows, measured, args.results)
    print(table(data["faults"]))
    print(json.dumps({"summary": data["summary"], "overhead": data.get("overhead")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
