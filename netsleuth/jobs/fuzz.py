"""`netsleuth fuzz`: drive a real controller through random inputs until an invariant breaks.

Each step is one round, as in STS: the seeded fuzzer picks the round's
inputs (failures, recoveries, migrations, traffic, drops, delays), the World
applies them, the network runs for the round, then the invariants are
checked. A finding is reported only once it has persisted for ``persist``
consecutive checks; earlier ones are recorded in the trace as transient.

With ``check_every_flowmod`` the forwarding invariants are also checked after
every FLOW_MOD a switch applies (:mod:`netsleuth.jobs.every_flowmod`), so each
violation the rounds report names the message that produced it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
from dataclasses import dataclass, field
from pathlib import Path

from netsleuth.errors import NetsleuthError
from netsleuth.invariants import registry
from netsleuth.invariants.persistence import PersistenceTracker
from netsleuth.jobs.every_flowmod import LOCATED, EveryFlowMod
from netsleuth.live.driver import Runtime
from netsleuth.live.findings import OBSERVED
from netsleuth.live.ready import Warmup
from netsleuth.live.session import JobProgress, JobResult, Session
from netsleuth.model.addr import int_to_ip
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.model.topology import parse_topo
from netsleuth.schedulers.config_edits import HostAddr
from netsleuth.schedulers.fuzz import Fuzzer, FuzzState, Planned, RateError, Rates
from netsleuth.trace import schema as ts
from netsleuth.trace.controller_spec import ControllerSpec
from netsleuth.trace.validate import CONFIGURABLE_KINDS, config_sha256
from netsleuth.world.events import Effect


@dataclass
class FuzzOptions:
    controller: str | list[str]
    topo: str
    out: Path
    steps: int = 200
    seed: int = 0
    rates: Rates = field(default_factory=Rates)
    checks: str | None = None
    persist: int = 3
    keep_going: bool = False
    round_seconds: float = 0.1
    check_every: int = 1
    handshake_timeout: float = 60.0
    record_packets: bool = True
    isolation: Path | None = None
    openflow: str = "auto"
    warmup: float | str | Warmup = 0.0
    limits: SwitchLimits = field(default_factory=SwitchLimits)
    check_every_flowmod: bool = False
    services: tuple[str, ...] = ()  # addresses no host has (a load balancer's virtual IP): service_traffic


class FlowModCheckError(NetsleuthError):
    pass


def check_services(services: tuple[str, ...], rates: Rates, topo: str) -> None:
    """service_traffic needs a --service, and a service address is IPv4 that no host of ``topo`` has."""
    if rates.get("service_traffic") > 0 and not services:
        raise RateError(f"service_traffic={rates.get('service_traffic'):g} needs an address to connect to",
                        "add --service IP (e.g. the virtual IP of POX's misc.ip_loadbalancer --ip=IP)")
    hosts = {int_to_ip(h.ip): h.name for h in parse_topo(topo).hosts}
    for ip in services:
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            raise RateError(f"service address {ip!r} is not an IPv4 address", "give --service like 10.0.1.1") from None
        if ip in hosts:
            raise RateError(f"service address {ip} is {hosts[ip]}'s own", "give an address no host of the "
                            "topology has (a virtual IP); traffic to a host is the traffic rate's")


def fuzz(opts: FuzzOptions, progress: JobProgress | None = None) -> JobResult:
    invariants = registry.resolve(opts.checks)
    _check_config_changes(opts)
    check_services(opts.services, opts.rates, opts.topo)
    if opts.check_every_flowmod and not any(i.name in LOCATED for i in invariants):
        raise FlowModCheckError(f"--check-every-flowmod locates violations of {', '.join(LOCATED)}, and "
                                f"--check selects none of them", "add one of them to --check, or drop "
                                "--check-every-flowmod")
    session = Session("fuzz", opts.topo, opts.controller, Path(opts.out), seed=opts.seed,
                      record_packets=opts.record_packets, handshake_timeout=opts.handshake_timeout,
                      checks=[i.name for i in invariants], isolation=opts.isolation,
                      header_extra={"rates": dict(sorted(opts.rates.values.items())), "persist": opts.persist,
                                    "steps": opts.steps, "round_seconds": opts.round_seconds,
                                    **({"check_every_flowmod": True} if opts.check_every_flowmod else {}),
                                    **({"services": list(opts.services)} if opts.services else {})},
                      openflow=opts.openflow, warmup=opts.warmup, limits=opts.limits)
    data = session.result.data
    data.update({"steps": 0, "inputs": {}, "rates": dict(sorted(opts.rates.values.items())),
                 "persist": opts.persist})

    async def body(s: Session, rt: Runtime) -> None:
        await rt.settle(0.2)
        fuzzer = Fuzzer(random.Random(opts.seed), opts.rates)
        tracker = PersistenceTracker(opts.persist)
        failed_links: list[tuple[str, int, str, int]] = []
        watch = _watch_flow_mods(s, invariants) if opts.check_every_flowmod else None
        s.progress.phase("fuzzing", opts.steps)
        for step in range(1, opts.steps + 1):
            if watch is not None:
                watch.round = step
            for planned in fuzzer.plan_round(_state(s, failed_links, opts.services)):
                rt.apply(await _apply(s, planned, failed_links))
                data["inputs"][planned.kind] = data["inputs"].get(planned.kind, 0) + 1
            rt.kick()
            await asyncio.sleep(opts.round_seconds)
            await rt.settle(quiet=0.03, timeout=max(1.0, 10 * opts.round_seconds))
            data["steps"] = step
            if step % opts.check_every == 0 and _check(s, tracker, invariants, step, watch) and not opts.keep_going:
                break
            s.progress.advance(step)
        if watch is not None:
            s.world.table_observers.remove(watch)

    return session.execute(body, progress)


def _watch_flow_mods(s: Session, invariants: list) -> EveryFlowMod:
    """Check the forwarding invariants after every FLOW_MOD the switches apply from now on."""
    watch = EveryFlowMod(s.world.view, invariants,
                         lambda f, persistent, details: s.record_finding(f, persistent, details))
    s.recorder.observers.append(watch.observe)
    s.world.table_observers.append(watch)
    s.result.data["every_flowmod"] = watch.stats()
    watch.settle()  # what the bootstrap installed, blamed on it
    return watch


def _check_config_changes(opts: FuzzOptions) -> None:
    """A config_change rate needs a controller with a configuration file netsleuth rewrites (Faucet's)."""
    if opts.rates.get("config_change") <= 0:
        return
    texts = [opts.controller] if isinstance(opts.controller, str) else list(opts.controller)
    if not any(ControllerSpec.parse(t).kind in CONFIGURABLE_KINDS for t in texts):
        raise RateError(f"config_change={opts.rates.get('config_change'):g} needs a controller configured by a "
                        f"file netsleuth can rewrite, and {' + '.join(texts)} has none",
                        "use --controller faucet:auto or faucet:FILE.yaml, or drop the config_change rate")


def _state(s: Session, failed_links: list[tuple[str, int, str, int]], services: tuple[str, ...] = ()) -> FuzzState:
    """What the fuzzer may act on; all of it follows from earlier inputs, never from timing."""
    w = s.world
    switch_links = tuple(k for k in w.link_up if k[0] in w.switches and k[2] in w.switches)
    live = tuple(sorted(k for k in switch_links if w.link_up[k]))
    alive = tuple(sorted(c for c, a in w.controllers_alive.items() if a))
    channels = tuple((sw, c) for sw in w.switches for c in sorted(w.controllers_alive))
    blocked_pairs = {(sw, c) for sw, c in channels if (w.switches[sw].dpid, c) in w.blocked}
    return FuzzState(
        live_switches=tuple(n for n, up in w.switch_up.items() if up),
        failed_switches=tuple(n for n, up in w.switch_up.items() if not up),
        live_links=live,
        failed_links=tuple(sorted(failed_links)),
        alive_controllers=alive,
        crashed_controllers=tuple(sorted(c for c, a in w.controllers_alive.items() if not a)),
        open_channels=tuple(p for p in channels if p not in blocked_pairs),
        blocked_channels=tuple(p for p in channels if p in blocked_pairs),
        hosts=tuple(w.hosts),
        host_switch={h: loc[0] for h, loc in w.host_at.items()},
        switches=tuple(w.switches),
        links_into=tuple(sorted({(k[2], k[3]) for k in live} | {(k[0], k[1]) for k in live})),
        configs=tuple((c.name, w.configs[c.name]) for c in s.controllers if c.configurable and c.name in w.configs),
        host_addrs=tuple(HostAddr(h.name, h.ip) for h in w.topology.hosts),
        services=tuple(services),
    )


def _send_traffic(w, a: dict) -> list[Effect]:
    if "dst_ip" in a:
        w.connect_to_service(a["host"], a["dst_ip"])
    else:
        w.inject_traffic(a["host"], a["dst"], a["what"])
    return []  # the packet waits in the World's channels; nothing for the edge to do


# Inputs whose details the World decides (the packet, the free port, the fingerprint of
# the message held) and records; the fuzzer only names the intent.
_DECIDED_BY_WORLD = {
    "traffic": _send_traffic,
    "host_migration": lambda w, a: w.migrate_host(a["host"], a["new_switch"]),
    "dataplane_drop": lambda w, a: w.drop_next_packet(a["node"], a["port"]),
    "dataplane_delay": lambda w, a: w.delay_next_packet(a["node"], a["port"], a["seconds"]),
    "control_delay": lambda w, a: w.delay_next_message(a["switch"], a["controller"], a["direction"], a["seconds"]),
}


async def _apply(s: Session, p: Planned, failed_links: list[tuple[str, int, str, int]]) -> list[Effect]:
    """Carry out one planned input; the rest go exactly as a recorded input is replayed
    (Session.apply_input), so crashing and restarting controllers lives in one place."""
    args = dict(p.args)
    if p.kind == "config_change":
        text = str(args["config"])
        return await s.apply_input(ts.ConfigChange(seq=0, t=0.0, id="planned", controller=str(args["controller"]),
                                                   edit=str(args["edit"]), config=text,
                                                   sha256=config_sha256(text)))
    if p.kind in _DECIDED_BY_WORLD:
        return _DECIDED_BY_WORLD[p.kind](s.world, args)
    if p.kind in ("link_failure", "link_recovery"):
        link = (args["node1"], args["port1"], args["node2"], args["port2"])
        # a planned link's ends are (str, int, str, int)
        (failed_links.append if p.kind == "link_failure" else failed_links.remove)(link)  # type: ignore[arg-type]
    # Only the parameters matter to apply_input; the World records the real event (id, deps).
    # an input kind's class: an InputEvent, with an id
    return await s.apply_input(ts.EVENT_KINDS[p.kind](seq=0, t=0.0, id="planned", **args))  # type: ignore[call-arg]


def _check(s: Session, tracker: PersistenceTracker, invariants: list, step: int,
           watch: EveryFlowMod | None = None) -> bool:
    """One invariant round; True when a violation just became persistent.  With ``watch``
    each finding recorded names the message after which it first appeared."""
    s.note_controller_deaths()
    s.observed.poll()
    # loops on real packets, tracebacks and refused messages are recorded as they happen: a new one stops the run
    stoppers = {i.name for i in invariants} & {"dataplane-loops", *OBSERVED}
    seen_before = getattr(s, "_observed_seen", 0)
    seen = sum(1 for v in s.world.observed_violations if v is not None and v.invariant in stoppers and v.persistent)
    s._observed_seen = seen  # type: ignore[attr-defined]  # kept on the session between rounds
    observed_loop = seen > seen_before
    if watch is not None:
        watch.settle()
    findings = registry.check(s.world.view(), invariants)
    outcome = tracker.update(step, findings)
    for t in outcome.new_transient:
        if t.streak < tracker.threshold:
            s.record_finding(t.finding, persistent=False, details={"round": step, **_first_seen(watch, t.finding)})
    for t in outcome.new_persistent:
        s.record_finding(t.finding, persistent=True, details={"round": t.first_round, "confirmed_round": step,
                                                              **_first_seen(watch, t.finding)})
    if watch is not None:
        watch.end_round(set(tracker.active))
        s.result.data["every_flowmod"] = watch.stats()
    return bool(outcome.new_persistent) or observed_loop


def _first_seen(watch: EveryFlowMod | None, f: object) -> dict:
    """The details naming the message after which ``f`` first appeared (none without the option)."""
    if watch is None:
        return {}
    out: dict[str, object] = {}
    cause = watch.cause_of(f)  # type: ignore[arg-type]
    if cause is not None:
        out.update(first_seen=cause.to_json(), first_seen_text=f"after {cause.text}")
    origin = watch.rule_origin(f)  # type: ignore[arg-type]
    if origin is not None and (cause is None or origin.seq != cause.seq):
        out.update(rule_from=origin.to_json(), rule_from_text=origin.text)
    return out
