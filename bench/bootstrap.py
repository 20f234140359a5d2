"""Bootstrap benchmark: FatTree K against the real os-ken 1.4.1 simple_switch.

For each K, in a fresh subprocess of this script (``--one K``) so that peak
memory is per K:

* bootstrap time: from the first TCP connect (``Runtime.start``) until every
  switch has completed the OpenFlow handshake (FEATURES_REPLY delivered,
  ``Runtime.wait_handshake``);
* peak memory: ``ru_maxrss`` of netsleuth's own process, and the controller
  process's peak RSS sampled with psutil (plus the kernel's VmHWM as a check);
* link failures: 5% of the switch-switch links (``random.Random(seed)``) are
  brought down with ``World.set_link``; the time runs until the controller has
  *processed* every PORT_STATUS, i.e. until simple_switch has logged
  ``port modified <port_no>`` twice per failed link.

The parent prints a rich table and writes ``bench/results/bootstrap.json``.

    .venv/bin/python bench/bootstrap.py                 # K = 4,8,16,24,32,48
    .venv/bin/python bench/bootstrap.py --ks 4,8,16 --timeout 120
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CONTROLLER = "osken:os_ken.app.simple_switch"
DEFAULT_KS = "4,8,16,24,32,48"
RESULTS = ROOT / "bench" / "results" / "bootstrap.json"
MARKER = b"port modified "


# --------------------------------------------------------------------------- one K (child)
class PeakSampler(threading.Thread):
    """Samples a process's RSS (with its children) with psutil until stopped."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self.samples = 0
        self._halt = threading.Event()

    def sample(self) -> None:
        import psutil
        try:
            p = psutil.Process(self.pid)
            rss = p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
        except psutil.Error:
            return
        self.samples += 1
        self.peak = max(self.peak, rss)

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.sample()


def _vmhwm(pid: int) -> int | None:
    """The kernel's peak RSS (VmHWM) of a live process, in bytes."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _gc_timer():
    """Start timing the garbage collector; returns a function giving the totals so far."""
    import gc
    state = {"t": 0.0, "n": [0, 0, 0], "start": 0.0}

    def cb(phase: str, info: dict) -> None:
        if phase == "start":
            state["start"] = time.perf_counter()
        else:
            state["t"] += time.perf_counter() - state["start"]
            state["n"][info["generation"]] += 1

    gc.callbacks.append(cb)
    return lambda: {"seconds": round(state["t"], 3), "collections": list(state["n"])}


def _listen_overflows() -> int | None:
    """TcpExt ListenOverflows (SYNs dropped by full accept queues, host-wide)."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            return int(table.get("ListenOverflows", 0))
    return None


def _cpu_seconds(pid: int) -> float | None:
    import psutil
    try:
        t = psutil.Process(pid).cpu_times()
        return round(t.user + t.system, 3)
    except psutil.Error:
        return None


def _count_marker(path: Path, offset: int) -> int:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().count(MARKER)


async def _drive(world, endpoint: tuple[str, int], controller, args, out: dict) -> None:
    from netsleuth.live.driver import Runtime

    topo = world.topology
    n_sw = len(topo.switches)
    extra = {} if args.concurrency is None else {"connect_concurrency": args.concurrency}
    rt = Runtime(world, {controller.name: endpoint}, **extra)
    out["connect_concurrency"] = rt.connect_concurrency
    try:
        overflows = _listen_overflows()
        cpu0, ccpu0 = time.process_time(), _cpu_seconds(controller.pid)
        t0 = time.monotonic()
        await rt.start()
        t_connected = time.monotonic()
        done = await rt.wait_handshake(args.timeout)
        t_boot = time.monotonic()
        out["handshakes"] = done
        out["connect_s"] = round(t_connected - t0, 3)
        out["bootstrap_s"] = round(t_boot - t0, 3)
        out["bootstrap_cpu_s"] = {"netsleuth": round(time.process_time() - cpu0, 3),
                                  "controller": round((_cpu_seconds(controller.pid) or 0) - (ccpu0 or 0), 3)}
        if overflows is not None:
            out["listen_overflows"] = (_listen_overflows() or 0) - overflows
        if done < n_sw:
            out["error"] = (f"{n_sw - done} of {n_sw} handshakes missing after {args.timeout}s "
                            f"(controller alive: {controller.alive()})")
            return
        out["settled"] = await rt.settle(0.3, timeout=min(30.0, args.timeout))

        # ---- link failures
        sw_links = [lk for lk in topo.links if topo.is_switch(lk.node1) and topo.is_switch(lk.node2)]
        n_fail = max(1, round(len(sw_links) * args.fail_fraction))
        chosen = random.Random(args.seed).sample(sw_links, n_fail)
        expected = 2 * n_fail
        log = controller.log_path
        offset = log.stat().st_size
        sent_before = world.stats.to_controller
        cpu1, ccpu1 = time.process_time(), _cpu_seconds(controller.pid)
        t1 = time.monotonic()
        for link in chosen:
            world.set_link(link.node1, link.port1, False)
        rt.kick()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + args.timeout
        seen = 0
        t_sent = None
        while True:
            if t_sent is None and world.stats.to_controller - sent_before >= expected:
                t_sent = time.monotonic()
            seen = _count_marker(log, offset)
            if seen >= expected or loop.time() >= deadline or not controller.alive():
                break
            await asyncio.sleep(0.01)
        t_fail = time.monotonic()
        out["failed_links"] = n_fail
        out["port_status_expected"] = expected
        out["port_status_processed"] = seen
        out["port_status_sent_s"] = None if t_sent is None else round(t_sent - t1, 3)
        out["failure_s"] = round(t_fail - t1, 3)
        out["failure_cpu_s"] = {"netsleuth": round(time.process_time() - cpu1, 3),
                                "controller": round((_cpu_seconds(controller.pid) or 0) - (ccpu1 or 0), 3)}
        if seen < expected:
            out["error"] = f"controller processed {seen} of {expected} PORT_STATUS within {args.timeout}s"
    finally:
        pump = rt._pump_task
        if pump is not None and pump.done() and not pump.cancelled() and pump.exception():
            out.setdefault("error", f"runtime pump died: {pump.exception()!r}")
        await rt.close()


def run_one(k: int, args: argparse.Namespace) -> dict:
    from netsleuth import __version__
    from netsleuth.controllers.external import ControllerProcess
    from netsleuth.controllers.spec import parse_controller
    from netsleuth.model.topo_builders import parse_topo
    from netsleuth.trace import schema as ts
    from netsleuth.trace.io import TraceWriter
    from netsleuth.world.clock import WallClock
    from netsleuth.world.world import Recorder, World

    spec_text = f"fattree,{k}"
    out: dict = {"k": k}
    t_build = time.monotonic()
    topo = parse_topo(spec_text)
    sw_links = sum(1 for lk in topo.links if topo.is_switch(lk.node1) and topo.is_switch(lk.node2))
    out.update(switches=len(topo.switches), hosts=len(topo.hosts), links=len(topo.links),
               switch_links=sw_links, switch_ports=sum(s.num_ports for s in topo.switches))
    tmp = Path(tempfile.mkdtemp(prefix=f"netsleuth-bench-k{k}-"))
    controller = ControllerProcess(parse_controller(CONTROLLER), tmp / "controller.log", name="c0")
    header = ts.TraceHeader(topology=topo.to_json(), topology_spec=spec_text, controller=CONTROLLER,
                            seed=args.seed, tool_version=__version__, command="bench-bootstrap")
    clock = WallClock()
    sampler = None
    profiler = None
    try:
        with TraceWriter(tmp / "trace.jsonl", header) as writer:
            recorder = Recorder(clock, writer.write)
            world = World(topo, clock, recorder, record_packets=False)
            out["build_s"] = round(time.monotonic() - t_build, 3)
            endpoint = controller.start()
            sampler = PeakSampler(controller.pid)
            sampler.start()
            gc_time = _gc_timer()
            if args.profile:
                import cProfile
                profiler = cProfile.Profile()
                profiler.enable()
            asyncio.run(_drive(world, endpoint, controller, args, out))
            if profiler:
                profiler.disable()
                profiler.dump_stats(args.profile)
            out["trace_events"] = recorder.seq
            out["gc"] = gc_time()
        out["controller_vmhwm_mb"] = round((_vmhwm(controller.pid) or 0) / 2**20, 1)
        out["controller_errors"] = controller.log_errors()[:5]
    finally:
        try:
            if sampler:
                sampler.stop()
        finally:
            controller.stop()
            if not args.keep:
                trace = tmp / "trace.jsonl"
                out["trace_bytes"] = trace.stat().st_size if trace.exists() else 0
                shutil.rmtree(tmp, ignore_errors=True)
    out["controller_peak_mb"] = round((sampler.peak if sampler else 0) / 2**20, 1)
    out["controller_rss_samples"] = sampler.samples if sampler else 0
    out["netsleuth_peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.keep:
        out["trace_bytes"] = (tmp / "trace.jsonl").stat().st_size
        out["workdir"] = str(tmp)
    if out.get("bootstrap_s") and out["switches"]:
        out["s_per_1000_switches"] = round(out["bootstrap_s"] / out["switches"] * 1000, 3)
        out["us_per_switch_port"] = round(out["bootstrap_s"] / out["switch_ports"] * 1e6, 1)
    return out


# --------------------------------------------------------------------------- parent
def machine_info() -> dict:
    import psutil
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"platform": platform.platform(), "cpu": cpu, "cpus": os.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version()}
    try:
        from netsleuth import __version__
        from netsleuth.controllers.external import find_controller_python
        info["netsleuth"] = __version__
        py = find_controller_python()
        info["controller_python"] = subprocess.run(
            [py, "-c", "import sys, importlib.metadata as m; "
                       "print(sys.version.split()[0], m.version('os-ken'))"],
            capture_output=True, text=True, timeout=30).stdout.split()
    except Exception as exc:  # noqa: BLE001 - informational only
        info["controller_python"] = f"unknown ({exc})"
    return info


def run_child(k: int, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(k), "--timeout", str(args.timeout),
           "--seed", str(args.seed), "--fail-fraction", str(args.fail_fraction)]
    if args.concurrency is not None:
        cmd += ["--concurrency", str(args.concurrency)]
    if args.keep:
        cmd.append("--keep")
    limit = 3 * args.timeout + 120
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"k": k, "error": f"child timed out after {limit}s"}
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"k": k, "error": f"child exited {p.returncode}: {p.stderr.strip()[-800:]}"}
    return json.loads(lines[-1])


def _fmt(v, spec: str = "") -> str:
    if v is None:
        return "-"
    return format(v, spec) if spec else str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default=DEFAULT_KS, help=f"FatTree K values (default {DEFAULT_KS})")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds allowed for the handshakes and for the failure processing, per K")
    ap.add_argument("--seed", type=int, default=0, help="seed choosing the failed links")
    ap.add_argument("--fail-fraction", type=float, default=0.05, help="share of switch-switch links failed")
    ap.add_argument("--concurrency", type=int, help="Runtime connect_concurrency (default: Runtime's)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--keep", action="store_true", help="keep each K's trace and controller log")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--profile", help=argparse.SUPPRESS)  # with --one: cProfile stats file
    args = ap.parse_args(argv)

    if args.one is not None:
        print(json.dumps(run_one(args.one, args)), flush=True)
        return 0

    from rich.console import Console
    from rich.table import Table

    console = Console()
    if console.width < 140 and not console.is_terminal:
        console = Console(width=140)
    ks = [int(k) for k in args.ks.split(",") if k.strip()]
    rows = []
    for k in ks:
        console.print(f"[dim]fattree,{k} ...[/dim]")
        r = run_child(k, args)
        rows.append(r)
        if r.get("error"):
            console.print(f"[red]K={k}: {r['error']}[/red]")

    table = Table(title=f"netsleuth bootstrap vs {CONTROLLER} (FatTree)")
    for col in ("K", "switches", "hosts", "links", "bootstrap s", "s / 1000 sw", "netsleuth peak MB",
                "controller peak MB", "failed links", "failure s", "µs / switch port"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["k"]), _fmt(r.get("switches")), _fmt(r.get("hosts")), _fmt(r.get("links")),
                      _fmt(r.get("bootstrap_s"), ".2f"), _fmt(r.get("s_per_1000_switches"), ".2f"),
                      _fmt(r.get("netsleuth_peak_mb"), ".0f"), _fmt(r.get("controller_peak_mb"), ".0f"),
                      _fmt(r.get("failed_links")), _fmt(r.get("failure_s"), ".2f"),
                      _fmt(r.get("us_per_switch_port"), ".0f"))
    console.print(table)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": "bootstrap", "controller": CONTROLLER, "seed": args.seed,
           "fail_fraction": args.fail_fraction, "timeout": args.timeout, "concurrency": args.concurrency,
           "machine": machine_info(), "results": rows}
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 1 if any(r.get("error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
