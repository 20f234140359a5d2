"""`netsleuth invariants TRACE --at-sts-violation`: does netsleuth agree with STS's own verdicts?

A trace imported from STS keeps every ``InvariantViolation`` STS recorded (as
a ``violation`` event whose details name STS's label, round and check). This
job rebuilds the network state from the trace up to each of them -- the point
where STS looked -- and runs netsleuth's counterpart of the STS check there:

* ``check_liveness`` (and the "all controllers dead" test STS runs before
  every check): the controllers STS named must be down in the rebuilt state
  -- crashed by an input, or found exited. STS counts a controller its
  fuzzer killed as down, so this compares controller states, not only
  netsleuth's ``liveness`` findings (which leave input-crashed ones out);
* loops (``check_loops``, ``python_check_loops``, ``check_for_loops_or_connectivity``,
  whose connectivity half only ever ends the STS run): ``loops``;
* blackholes (``python_check_blackholes``, ``check_for_blackholes_or_connectivity``):
  ``blackholes``; connectivity checks: ``reachability``; the combined checks
  any of theirs.

Each recorded violation gets a status: ``agrees`` (the counterpart finds the
violation, and where STS's record names a place -- the switches its loop
visits, the ports of its blackholes -- at that same place); ``disagrees`` (the
counterpart finds nothing there, or finds it somewhere else, with the likely
reason); ``no-counterpart``
(a check netsleuth has no invariant for, e.g. one defined in the experiment's
config); ``not-rebuildable`` (the flow tables cannot be rebuilt because the
trace holds the OpenFlow messages only as fingerprints).

Each verdict also says what it rests on (``basis``): ``tables`` (netsleuth's
check over the flow tables rebuilt from the recorded messages: independent of
STS's verdict), ``inputs`` (a controller down because a recorded input crashed
it) or ``recording`` (a controller down only because the import took its exit
from the very record STS made when it checked: that agreement is circular, a
confirmation of the import rather than of STS). The counts keep them apart.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.invariants import registry
from netsleuth.model.topology import Topology
from netsleuth.trace import schema as ts
from netsleuth.trace.controller_spec import SEPARATOR
from netsleuth.trace.io import read_trace
from netsleuth.world.rebuild import replay_states

__all__ = ["sts_agreement", "StsAgreementError", "STS_COUNTERPARTS"]

STS_COUNTERPARTS: dict[str, tuple[str, ...]] = {
    "check_liveness": ("liveness",),
    "all_controllers_dead": ("liveness",),
    "check_loops": ("loops",),
    "python_check_loops": ("loops",),
    "check_for_loops_or_connectivity": ("loops",),
    "check_for_loops_blackholes": ("loops", "blackholes"),
    "check_for_loops_or_blackholes": ("loops", "blackholes"),
    "check_for_loops_blackholes_or_connectivity": ("loops", "blackholes"),
    "check_blackholes": ("blackholes",),
    "python_check_blackholes": ("blackholes",),
    "check_for_blackholes": ("blackholes",),
    "check_for_blackholes_or_connectivity": ("blackholes",),
    "check_connectivity": ("reachability",),
    "python_check_connectivity": ("reachability",),
    "check_persistent_connectivity": ("reachability",),
    "python_check_persistent_connectivity": ("reachability",),
    "check_everything": ("liveness", "loops", "blackholes", "reachability"),
}
"""STS check name (without ``InvariantChecker.``) -> the netsleuth invariants that decide the same thing."""

_TABLES = {"loops", "blackholes", "reachability"}
_VISITS = re.compile(r"'visits':\s*\[([\d,\s]+)\]")
_HASSEL_PORT = re.compile(r"\),\s*(\d{6,}),")  # STS's blackhole tuples: (header, dpid * 100000 + port, ...)
_SHOWN = 5


class StsAgreementError(NetsleuthError):
    """The trace holds no violation recorded by STS to compare with."""


def _sts_check(v: ts.Violation) -> str | None:
    name = v.details.get("sts_invariant")
    return name.rsplit(".", 1)[-1] if isinstance(name, str) and name else None


def _loop_switches(viols: list[str], topo: Topology) -> list[str]:
    """Switches on the loops STS printed (its Hassel ports are dpid * 100000 + port)."""
    names: list[str] = []
    for m in _VISITS.finditer("\n".join(viols)):
        for text in m.group(1).split(","):
            if text.strip().isdigit():
                dpid = int(text) // 100000
                try:
                    name = topo.switch_by_dpid(dpid).name
                except NetsleuthError:
                    continue
                if name not in names:
                    names.append(name)
    return names


def _blackhole_ports(viols: list[str], topo: Topology) -> list[list[Any]]:
    """Where STS's blackholes are, ``[switch, port, host or None]`` (its tuples are ``(header, port, ...)``)."""
    out: list[list[Any]] = []
    for m in _HASSEL_PORT.finditer("\n".join(viols)):
        code = int(m.group(1))
        try:
            name = topo.switch_by_dpid(code // 100000).name
        except NetsleuthError:
            continue
        far = topo.neighbor(name, code % 100000)
        entry = [name, code % 100000, far[0] if far and topo.is_host(far[0]) else None]
        if entry not in out:
            out.append(entry)
    return out


def _outputs_to(world: Any, switch: str, port: int) -> bool:
    """Some flow entry of the (1.0) switch outputs to ``port``."""
    s = world.switches.get(switch)
    return s is not None and any(getattr(a, "port", None) == port for e in s.table.entries() for a in e.actions)


def _judge(v: ts.Violation, world: Any, controllers: list[str], has_tables: bool,
           topo: Topology) -> dict[str, Any]:
    viols = [str(x) for x in v.details.get("violations", [])]
    check = _sts_check(v)
    record: dict[str, Any] = {
        "seq": v.seq, "sts_label": v.details.get("sts_label"), "sts_round": v.details.get("sts_round"),
        "persistent": v.persistent, "sts_check": v.details.get("sts_invariant"),
        "sts_violations": [" ".join(x.split())[:300] for x in viols[:_SHOWN]], "sts_violation_count": len(viols),
    }
    named = [x for x in viols if x in controllers]
    if named and len(named) == len(viols) and (check in ("check_liveness", "all_controllers_dead")
                                               or set(named) == set(controllers)):
        return _judge_liveness(record, named, world, check)
    counterpart = STS_COUNTERPARTS.get(check or "")
    record["netsleuth_checks"] = list(counterpart or ())
    if counterpart is None:
        record.update(status="no-counterpart", agrees=False,
                      reason=f"STS's check {check} has no netsleuth counterpart" + (
                          " (a check defined in the experiment's config)" if v.invariant.startswith("sts:") else "")
                      if check else "the trace does not say which STS check found this violation")
        return record
    if set(counterpart) <= _TABLES and not has_tables:
        record.update(status="not-rebuildable", agrees=False,
                      reason="the trace records the OpenFlow messages only as fingerprints (STS before mid-2013), "
                             "so the flow tables STS checked cannot be rebuilt")
        return record
    findings = registry.check(world.view(), registry.resolve(list(counterpart)))
    record["netsleuth_findings"] = [{"invariant": f.invariant, "message": " ".join(f.message.split())[:300],
                                     "switches": list(f.switches)} for f in findings[:_SHOWN]]
    record["netsleuth_finding_count"] = len(findings)
    if "loops" in counterpart:
        record["sts_loop_switches"] = _loop_switches(viols, topo)
    if "blackholes" in counterpart:
        record["sts_blackhole_ports"] = _blackhole_ports(viols, topo)
    record["basis"] = "tables"
    same, where = _same_place(counterpart, findings, record)
    record["same_place"] = same
    if findings and same is False:
        record.update(status="disagrees", agrees=False,
                      reason=f"netsleuth finds it {where}, not where STS recorded it "
                             f"({_sts_place(record)})")
    elif findings:
        record.update(status="agrees", agrees=True,
                      reason="" if same else "STS's record names no place to compare")
    else:
        why = f"netsleuth's {' / '.join(counterpart)} find(s) nothing in the state rebuilt at this point"
        if not has_tables and set(counterpart) & _TABLES:
            why += "; the trace holds no OpenFlow message bodies, so the flow tables are empty"
        at_hosts = [f"{sw}:{port} (host {host}'s port)" for sw, port, host in record.get("sts_blackhole_ports", [])
                    if host and _outputs_to(world, sw, port)]
        if at_hosts:
            why += (f"; STS put its blackhole at {', '.join(at_hosts)}, where the rebuilt tables output to the "
                    "host: netsleuth counts that as delivered, not dropped")
        record.update(status="disagrees", agrees=False, reason=why)
    return record


_PORT_IN_WHY = re.compile(r"output:(\d+)|port (\d+)")


def _same_place(counterpart: tuple[str, ...], findings: list[Any],
                record: dict[str, Any]) -> tuple[bool | None, str]:
    """Whether some finding sits where STS put its violation (None: STS's record names no place),
    and where netsleuth's findings are, in words.

    A loop is at the same place when its cycle's switches are among the switches STS's loop
    visited (STS's path may lead in to the cycle); a blackhole when it drops at a switch port STS
    named."""
    sts_loop = set(record.get("sts_loop_switches") or ())
    sts_ports = {(sw, port) for sw, port, _host in record.get("sts_blackhole_ports") or ()}
    ours: list[str] = []
    same: bool | None = None
    for f in findings:
        if f.invariant == "loops" and sts_loop:
            ours.append("looping through " + ", ".join(f.switches))
            hit = bool(f.switches) and set(f.switches) <= sts_loop
        elif f.invariant == "blackholes" and sts_ports:
            sw = str(f.details.get("where", f.switches[0] if f.switches else ""))
            ports = {int(a or b) for w in f.details.get("why", []) for a, b in _PORT_IN_WHY.findall(str(w))}
            ours.append(f"dropping at {sw} port(s) {', '.join(map(str, sorted(ports))) or '?'}")
            hit = any((sw, p) in sts_ports for p in ports)
        else:
            continue
        same = bool(same) or hit
    return same, "; ".join(dict.fromkeys(ours))[:300]


def _sts_place(record: dict[str, Any]) -> str:
    parts = []
    if record.get("sts_loop_switches"):
        parts.append("a loop through " + ", ".join(record["sts_loop_switches"]))
    if record.get("sts_blackhole_ports"):
        parts.append("blackholes at " + ", ".join(f"{sw}:{port}" for sw, port, _h in record["sts_blackhole_ports"]))
    return "; ".join(parts)


def _judge_liveness(record: dict[str, Any], named: list[str], world: Any, check: str | None) -> dict[str, Any]:
    """STS named controllers it found down: are they down in the rebuilt state?"""
    view = world.view()
    down = sorted(c for c, alive in view.controllers_alive.items() if not alive)
    findings = registry.check(view, registry.resolve(["liveness"]))
    record["netsleuth_checks"] = ["liveness"]
    record["netsleuth_down_controllers"] = down
    record["netsleuth_findings"] = [{"invariant": f.invariant, "message": f.message, "switches": list(f.switches)}
                                    for f in findings[:_SHOWN]]
    record["netsleuth_finding_count"] = len(findings)
    if check not in ("check_liveness", "all_controllers_dead"):
        record["note"] = f"STS runs its all-controllers-dead test before {check}; this violation is that test's"
    missing = [c for c in dict.fromkeys(named) if c not in down]
    if missing:
        record.update(status="disagrees", agrees=False,
                      reason=f"STS found {', '.join(missing)} down, but in the rebuilt state "
                             f"{'it is' if len(missing) == 1 else 'they are'} running")
    else:
        crashed = sorted(c for c in named if c in view.crashed_by_input)
        # a controller that no input crashed is down only through the exit the import read off
        # STS's own check: confirming it confirms the import, not STS
        record["basis"] = "inputs" if len(crashed) == len(set(named)) else "recording"
        record.update(status="agrees", agrees=True,
                      reason="" if not crashed else
                      f"{', '.join(crashed)} crashed by an input (STS counts those as down; netsleuth's liveness "
                      "invariant does not report them)")
    return record


def sts_agreement(path: str | Path) -> dict[str, Any]:
    """Per violation STS recorded in the (imported) trace at ``path``: does netsleuth's counterpart agree?"""
    trace = read_trace(path)
    if trace.header.extra.get("imported_from") != "sts" and not any(
            isinstance(e, ts.Violation) and "sts_label" in e.details for e in trace.events):
        raise StsAgreementError(f"{path} was not imported from STS",
                                "import the STS experiment first: netsleuth import sts DIR --out trace.jsonl, "
                                "then run invariants --at-sts-violation on that trace")
    targets = {e.seq for e in trace.events if isinstance(e, ts.Violation) and "sts_label" in e.details}
    if not targets:
        raise StsAgreementError(f"{path} holds no violation recorded by STS",
                                "give the trace of an STS run that ended in an InvariantViolation "
                                "(or drop --at-sts-violation to check the state at the end)")
    topo = Topology.from_json(trace.header.topology)
    controllers = [c.strip() for c in trace.header.controller.split(SEPARATOR) if c.strip()]
    has_tables = any(isinstance(e, ts.ControlToSwitch) for e in trace.events)
    records: list[dict[str, Any]] = []
    for e, world in replay_states(trace.header, trace.events):
        if e.seq in targets and isinstance(e, ts.Violation):
            records.append(_judge(e, world, controllers, has_tables, topo))
    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    agree_by = {b: sum(1 for r in records if r["agrees"] and r.get("basis") == b)
                for b in ("tables", "inputs", "recording")}
    return {
        "trace": str(path), "mode": "at-sts-violation", "sts_violations": len(records),
        "agree": counts.get("agrees", 0), "disagree": len(records) - counts.get("agrees", 0),
        "agree_independent": agree_by["tables"] + agree_by["inputs"], "agree_from_recording": agree_by["recording"],
        "agree_by_basis": agree_by,
        "by_status": dict(sorted(counts.items())), "all_agree": all(r["agrees"] for r in records),
        "violations": records,
    }
