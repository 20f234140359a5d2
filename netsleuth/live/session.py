"""What every job against real controllers shares: set-up, bootstrap, tear-down.

`run`, `fuzz` and later `replay` all start controllers, open a trace, build
a World, connect every switch and wait for the handshakes, and all of them
must leave the trace and result.json on disk however they end (a controller
that dies, Ctrl-C, a handshake that never completes). That lives here once;
each job supplies only its middle part as an async function.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from netsleuth import __version__
from netsleuth.controllers.external import ControllerProcess
from netsleuth.controllers.faucet import config_record
from netsleuth.controllers.spec import as_spec
from netsleuth.errors import ControllerError
from netsleuth.invariants.policy.faucet import FaucetPolicyError, policy_from_text
from netsleuth.invariants.policy.isolation import load_isolation
from netsleuth.live.driver import Runtime
from netsleuth.live.findings import ObservedFindings
from netsleuth.live.ready import ReadyCondition, Warmup, auto_ready
from netsleuth.live.stop import stopped_by
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.model.topo_builders import parse_topo
from netsleuth.model.topology import Topology
from netsleuth.openflow.codec import version_name
from netsleuth.openflow.connection import offered_versions
from netsleuth.options import check_out_dir
from netsleuth.trace import schema as ts
from netsleuth.trace.controller_spec import ControllerSpec, join_all
from netsleuth.trace.io import TraceWriter
from netsleuth.world.clock import WallClock
from netsleuth.world.world import Recorder, World


class JobProgress(Protocol):
    def phase(self, name: str, total: int | None) -> None: ...
    def advance(self, completed: int) -> None: ...
    def note(self, text: str) -> None: ...


class SilentProgress:
    def phase(self, name: str, total: int | None) -> None:
        pass

    def advance(self, completed: int) -> None:
        pass

    def note(self, text: str) -> None:
        pass


@dataclass
class JobResult:
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def violations(self) -> list[dict]:
        return self.data.get("violations", [])

    @property
    def exit_code(self) -> int:
        """1 when a violation persisted or a ping of ``run --pingall`` failed, else 0."""
        pingall = self.data.get("pingall") or {}
        # pairs the controller's configuration keeps apart on purpose are expected to fail
        failed_pings = pingall.get("failed", 0) - len(pingall.get("failed_on_purpose", []))
        return 1 if failed_pings or any(v.get("persistent", True) for v in self.violations) else 0


@dataclass
class Session:
    """Controllers, trace, World and Runtime of one job, and the guarantees around them."""

    command: str
    topo_spec: str
    controller: str | ControllerSpec | Sequence[str | ControllerSpec]  # text is parsed and validated here
    out: Path
    seed: int | None = 0
    record_packets: bool = True
    handshake_timeout: float = 60.0
    checks: list[str] = field(default_factory=list)
    header_extra: dict = field(default_factory=dict)
    isolation: Path | None = None
    topology: Topology | None = None  # given as a description (e.g. from a trace header) instead of a spec
    openflow: str = "auto"             # OpenFlow versions the switches offer: 1.0, 1.3 or auto (both)
    warmup: float | str | Warmup = 0.0  # after the handshakes, no traffic and no checks: seconds, or "auto"
    limits: SwitchLimits = field(default_factory=SwitchLimits)  # packet buffering, table size
    coverage_dir: Path | None = None   # measure the controllers' lines after the handshakes into this folder
    coverage_framework: bool = False   # ... the framework's lines too (os-ken, POX's core)
    warmup_ready: ReadyCondition | None = None  # ends the warm-up early once it holds; warmup is then its bound
    prestarted: list[ControllerProcess] | None = None  # controllers already listening (live/spare.py), one per spec
    _death_waited: set[str] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        self.topo = self.topology or parse_topo(self.topo_spec)
        self.isolation_pairs = load_isolation(self.isolation, self.topo) if self.isolation else ()
        given = [self.controller] if isinstance(self.controller, (str, ControllerSpec)) else self.controller
        self.specs = [as_spec(c) for c in given]
        offered_versions(self.openflow)  # an unknown --openflow value fails here, before anything starts
        self.out = Path(self.out)
        warmup = Warmup.of(self.warmup)
        self.warmup_seconds = warmup.seconds
        self.warmup_auto = warmup.auto
        if warmup.auto and self.warmup_ready is None:
            self.warmup_ready = auto_ready(self.topo, [spec.kind for spec in self.specs])
        if warmup.seconds:  # replays warm up as long, and end it the same way
            self.header_extra = dict(self.header_extra, warmup=warmup.seconds,
                                     **({"warmup_auto": True} if warmup.auto else {}))
        if self.limits.to_json():
            self.header_extra = dict(self.header_extra, switch=self.limits.to_json())  # replays use them too
        self.result = JobResult({
            "command": self.command, "tool_version": __version__, "topology": self.topo_spec,
            "controller": join_all(self.specs), "switches": len(self.topo.switches),
            "hosts": len(self.topo.hosts), "checks": list(self.checks), "seed": self.seed, "completed": False,
            "openflow": self.openflow, **({"switch": self.limits.to_json()} if self.limits.to_json() else {}),
        })
        self.faucet_policy = self._faucet_policy()

    def _faucet_policy(self) -> object | None:
        """The first Faucet controller's config as a policy for the isolation and acl invariants; its
        text goes into the trace header so ``netsleuth invariants TRACE`` needs no file later. A config
        the policy reader cannot follow (``include:``) leaves them unchecked, said in result.json."""
        spec = next((s for s in self.specs if s.kind == "faucet"), None)
        if spec is None:
            return None
        record = config_record(spec.config, self.topo)
        self.header_extra = dict(self.header_extra, faucet_config=record)
        try:
            return policy_from_text(record["text"], self.topo, f"Faucet config {record['source']}")
        except FaucetPolicyError as exc:
            # Faucet runs it all the same; only the two invariants have nothing to hold the tables to.
            self.result.data["faucet_policy"] = f"not checked: {exc.one_line()}"
            return None

    def execute(self, body: Callable[[Session, Runtime], Awaitable[None]],
                progress: JobProgress | None = None,
                observers: tuple[Callable[[Any], None], ...] = ()) -> JobResult:
        """Start everything, bootstrap, run ``body``; always write trace and result.json."""
        progress = progress or SilentProgress()
        self.progress = progress
        check_out_dir(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.controllers = list(self.prestarted) if self.prestarted else [
            ControllerProcess(spec, self.out / ("controller.log" if i == 0 else f"controller-c{i}.log"),
                              name=f"c{i}", topology=self.topo, coverage_dir=self.coverage_dir,
                              coverage_framework=self.coverage_framework)
            for i, spec in enumerate(self.specs)]
        self.header = ts.TraceHeader(topology=self.topo.to_json(), topology_spec=self.topo_spec,
                                     controller=self.result.data["controller"], seed=self.seed,
                                     tool_version=__version__, command=self.command, extra=self.header_extra)
        clock = WallClock()
        started = time.monotonic()
        with TraceWriter(self.out / "trace.jsonl", self.header) as writer:
            self.writer = writer

            def record(event: Any) -> None:
                writer.write(event)
                if isinstance(event, ts.Violation):
                    writer.flush()  # the finding is what the trace is for: on disk at once

            self.recorder = Recorder(clock, record)
            self.recorder.observers.extend(observers)  # see everything, the bootstrap included
            if self.warmup_ready is not None:
                self.recorder.observers.append(self.warmup_ready.observe)
            self.world = World(self.topo, clock, self.recorder, record_packets=self.record_packets,
                               openflow=self.openflow, limits=self.limits)
            self.world.isolation = self.isolation_pairs
            self.world.faucet_policy = self.faucet_policy
            self.observed = ObservedFindings.for_session(self)
            self.recorder.observers.append(self.observed.observe)
            try:
                progress.phase("starting controller", None)
                self.endpoints = {}
                for c in self.controllers:
                    self.endpoints[c.name] = (c.host, c.port) if c.alive() and c.proc is not None else c.start()
                    self.recorder(ts.ControllerEvent, controller=c.name, what="started",
                                  detail=f"{c.spec} on {c.host}:{c.port}")
                    self._note_initial_config(c)
                asyncio.run(self._drive(body))
                self.result.data["completed"] = True
            except KeyboardInterrupt:
                self.result.data["interrupted"] = True
                self.result.data["stopped_by"] = stopped_by()
                raise
            finally:
                self.note_versions()
                self._finish(started)
                (self.out / "result.json").write_text(json.dumps(self.result.data, indent=2, sort_keys=True) + "\n")
                for c in self.controllers:
                    c.stop()
        return self.result

    def note_versions(self) -> None:
        """Name in the trace header the OpenFlow version each switch negotiated (known only after the
        handshakes, when the trace is already being written: the header line is replaced)."""
        versions = self.world.openflow_versions()
        if versions == self.header.openflow or self.writer.closed:
            return
        self.header = replace(self.header, openflow=versions)
        self.writer.replace_header(self.header)
        self.result.data["negotiated"] = dict(versions)

    async def _drive(self, body: Callable[[Session, Runtime], Awaitable[None]]) -> None:
        rt = Runtime(self.world, self.endpoints)
        flusher = asyncio.create_task(self._flush_periodically())
        watcher = asyncio.create_task(self._poll_observed())
        try:
            await self._bootstrap(rt)
            await self._mark_coverage()
            self.note_versions()
            if self.warmup_seconds > 0:
                await self._warm_up(rt)
            await self._unless_runtime_fails(rt, body(self, rt))
        finally:
            flusher.cancel()
            watcher.cancel()
            await rt.close()

    @staticmethod
    async def _unless_runtime_fails(rt: Runtime, work: Awaitable[None]) -> None:
        """Run ``work``; if a background task of the runtime died of an exception, stop it and
        raise that exception (an internal error: exit 3, with what was recorded kept)."""
        task = asyncio.ensure_future(work)
        watch = asyncio.ensure_future(rt.failed.wait())
        try:
            await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            watch.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            assert rt.failure is not None
            raise rt.failure
        task.result()

    async def _warm_up(self, rt: Runtime) -> None:
        """Let the controller settle (e.g. spanning tree converge): no traffic, no violations recorded."""
        self.progress.phase(f"warm-up ({'until ready, at most ' if self.warmup_auto else ''}{self.warmup_seconds:g} s)",
                            None)
        self.world.observing = False
        t0 = time.monotonic()
        try:
            await self._wait_warm(t0 + self.warmup_seconds)
            await rt.settle(0.1, timeout=2.0)
        finally:
            self.world.observing = True
        self.result.data["warmup"] = self.warmup_seconds
        if self.warmup_auto:
            self.result.data["warmup_auto"] = True
        if self.warmup_ready is not None:
            self.result.data["warmup_seconds"] = round(time.monotonic() - t0, 3)

    async def _wait_warm(self, deadline: float) -> None:
        """Sleep until ``deadline``, or until the ready condition holds (checked every 0.1 s)."""
        while (left := deadline - time.monotonic()) > 0:
            if self.warmup_ready is not None and self.warmup_ready.ready():
                return
            await asyncio.sleep(min(left, 0.1) if self.warmup_ready is not None else left)

    async def _flush_periodically(self, every: float = 0.2) -> None:
        """Events reach the disk within about a second even when none follow them:
        a netsleuth killed outright (SIGKILL) loses at most that much of its trace."""
        while True:
            await asyncio.sleep(every)
            self.writer.flush_if_due()

    async def _poll_observed(self, every: float = 0.1) -> None:
        """Read the controllers' logs and the switches' refusals as the run goes (not only at its end)."""
        while True:
            await asyncio.sleep(every)
            self.observed.poll()

    async def _bootstrap(self, rt: Runtime) -> None:
        t0 = time.monotonic()
        n_conn = len(self.topo.switches) * len(self.endpoints)
        self.progress.phase("connecting switches", n_conn)
        await rt.start(self.progress.advance)
        self.progress.phase("handshakes", n_conn)
        done = await rt.wait_handshake(self.handshake_timeout, self.progress.advance)
        self.result.data["bootstrap"] = {"connected": done, "expected": n_conn,
                                         "seconds": round(time.monotonic() - t0, 3)}
        if done < n_conn:
            if rt.version_mismatches:
                offered = ", ".join(version_name(v) for v in offered_versions(self.openflow))
                raise ControllerError(f"OpenFlow version mismatch: the switches offered OpenFlow {offered} "
                                      f"(--openflow {self.openflow}) but the controller refused it "
                                      f"({rt.version_mismatches[0].reason})",
                                      "pass --openflow with a version the controller speaks "
                                      "(--openflow auto offers 1.0 and 1.3)")
            for controller in self.controllers:
                if not controller.alive():
                    raise ControllerError(f"controller {controller.spec} exited (code "
                                          f"{controller.exit_code()}) during the handshake",
                                          f"see its log {controller.log_path}", details=controller.log_tail())
            controller = self.controllers[0]
            why = f" ({rt.protocol_errors[0]})" if rt.protocol_errors else ""
            raise ControllerError(f"{n_conn - done} of {n_conn} switches never completed the OpenFlow "
                                  f"handshake{why}",
                                  f"check that the controller speaks the OpenFlow versions offered "
                                  f"(--openflow {self.openflow}); see {controller.log_path}",
                                  details=controller.log_tail())

    async def _mark_coverage(self, timeout: float = 5.0) -> None:
        """Tell measured controllers the handshakes are done, and wait until they have switched, so
        that every line run for an input counts (controllers/covlaunch.py)."""
        waits = [w for w in (c.mark_coverage() for c in self.controllers) if w is not None]
        deadline = time.monotonic() + timeout
        while waits and time.monotonic() < deadline:
            waits = [w for w in waits if not w.exists()]
            await asyncio.sleep(0.01)

    def _note_initial_config(self, c: ControllerProcess) -> None:
        """Tell the World the configuration a configurable controller starts from (what it was told)."""
        text = c.initial_config() if c.configurable else None
        if text is None:
            return
        import yaml  # here: only configs (Faucet's) need YAML; importing it costs every command

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return  # the controller's own checker judged the file; the World just knows less
        if isinstance(data, dict):
            self.world.start_config(c.name, data)

    def controller_named(self, name: str) -> ControllerProcess:
        found = next((c for c in self.controllers if c.name == name), None)
        if found is None:
            raise ControllerError(f"an input names controller {name}, but this run has only "
                                  f"{', '.join(c.name for c in self.controllers)}",
                                  "run with as many --controller specs as the trace was recorded with")
        return found

    async def apply_input(self, e: Any) -> list:
        """Apply a recorded input; controller crashes and recoveries also act on the real process."""
        if isinstance(e, ts.ControllerCrash):
            self.controller_named(e.controller).kill()
        elif isinstance(e, ts.ConfigChange):
            c = self.controller_named(e.controller)
            path = await asyncio.to_thread(c.change_config, e.config)
            self.recorder(ts.ControllerEvent, controller=c.name, what="config_written",
                          detail=f"{path} ({e.edit}); SIGHUP" + ("" if c.alive() else " not sent: not running"))
        elif isinstance(e, ts.ControllerRecovery):
            c = self.controller_named(e.controller)
            # the restart may land on another port (its old one taken meanwhile): reconnect there
            self.endpoints[c.name] = await asyncio.to_thread(c.start)
            self.recorder(ts.ControllerEvent, controller=c.name, what="started",
                          detail=f"{c.spec} on {c.host}:{c.port}")
        return self.world.apply_recorded(e)

    def note_controller_deaths(self, grace: float = 1.0) -> None:
        """Mark controllers whose process died on its own (a real crash, not an injected one).

        A dying controller closes its sockets a moment before its process is gone, so a
        check in between would blame the switches ("not connected") instead of the
        controller.  When every connection to a controller has just gone down, give its
        process ``grace`` seconds to exit before judging; once per such episode.
        """
        world = self.world
        waited = self._death_waited
        for c in self.controllers:
            if not world.controllers_alive.get(c.name, True) or c.external:
                continue
            conns = [k for k in world.connections.values() if k.controller == c.name]
            all_down = bool(conns) and not any(k.up for k in conns)
            if not all_down:
                waited.discard(c.name)
            elif c.name not in waited and c.alive():
                waited.add(c.name)
                c.wait_exit(grace)
            if not c.alive():
                world.set_controller_alive(c.name, False)

    def record_finding(self, f: Any, persistent: bool, details: dict | None = None) -> Any:
        v = self.recorder(ts.Violation, invariant=f.invariant, message=f.message, persistent=persistent,
                          hosts=f.hosts, switches=f.switches, details=dict(f.details, **(details or {})))
        self.world.observed_violations.append(v)
        return v

    def _finish(self, started: float) -> None:
        wanted = set(self.result.data.get("checks", []))
        observed = getattr(self, "observed", None)
        if observed is not None:
            observed.poll(final=True)
        self.result.data["violations"] = [violation_json(v) for v in self.world.observed_violations
                                          if v is not None and v.invariant in wanted]
        if observed is not None:
            observed.annotate(self.result.data["violations"])
        statuses = []
        for c in self.controllers:
            errors = c.log_errors()
            for e in errors:
                self.recorder(ts.ControllerEvent, controller=c.name, what="log_error", detail=e)
            statuses.append({"name": c.name, "spec": str(c.spec), "alive": c.alive(), "exit_code": c.exit_code(),
                             "log": str(c.log_path), "logged_errors": errors})
        self.result.data["controllers"] = statuses
        s = self.world.stats
        self.result.data["stats"] = {"events_fired": s.fired, "to_switch": s.to_switch,
                                     "to_controller": s.to_controller, "packets": s.packets,
                                     "dropped_packets": s.dropped_packets, "loop_drops": s.loop_drops,
                                     "trace_events": self.recorder.seq}
        self.result.data["seconds"] = round(time.monotonic() - started, 3)


def violation_json(v: Any) -> dict:
    return {"invariant": v.invariant, "message": v.message, "persistent": v.persistent,
            "hosts": list(v.hosts), "switches": list(v.switches), "round": v.details.get("round"),
            "details": v.details, "seq": v.seq}
