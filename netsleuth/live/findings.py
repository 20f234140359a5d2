"""Findings a run observes rather than computes: controller tracebacks and refused messages.

`exceptions` reads each controller's log as it grows (controllers/logwatch.py): a traceback
becomes a violation at once, naming the input and the message the controller last received
before it.  `openflow-errors` turns each ERROR a switch answered a controller's message with
(world: ``Network.rejections``) into a violation.  Both are recorded as persistent violations
(an exception or a refusal is not a state that may still converge), once per distinct defect
(its ``details["group"]``), with how often it happened counted in result.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from netsleuth.controllers.logwatch import LogWatch
from netsleuth.invariants import exceptions as exc_check
from netsleuth.invariants import openflow_errors as of_check
from netsleuth.minimize.words import describe_input
from netsleuth.trace import schema as ts


class RecordingSession(Protocol):
    """What the findings need of the run that records them (live/session.py's Session is one):
    its checks, controllers and World to read, its result to annotate, and a way to record."""

    checks: list[str]
    controllers: Any
    world: Any
    result: Any

    def record_finding(self, f: Any, persistent: bool, details: dict | None = None) -> Any: ...

OBSERVED = ("exceptions", "openflow-errors")
"""The invariants this module records (with dataplane-loops, the World's, the observed ones that stop a fuzz run)."""

# os-ken's event classes for the messages a handler most often crashes on, by the message's type name
_EVENT_MESSAGE = {"EventOFPSwitchFeatures": "FEATURES_REPLY", "EventOFPErrorMsg": "ERROR"}


def _event_message(event: str | None) -> str | None:
    """PORT_STATUS for os-ken's EventOFPPortStatus: the message type a handler's event stands for."""
    if not event or not event.startswith("EventOFP"):
        return None
    if event in _EVENT_MESSAGE:
        return _EVENT_MESSAGE[event]
    name = event[len("EventOFP"):]
    return "".join(("_" + ch if ch.isupper() and i else ch) for i, ch in enumerate(name)).upper()


def _inputs_words(inputs: tuple[Any, ...]) -> str:
    if not inputs:
        return ""
    return ("after input " if len(inputs) == 1 else "after inputs ") + "; ".join(describe_input(e) for e in inputs)


@dataclass
class ObservedFindings:
    session: RecordingSession
    exceptions: bool = False
    errors: bool = False
    watches: list[tuple[str, LogWatch]] = field(default_factory=list)
    counts: dict[tuple, dict] = field(default_factory=dict)
    # the inputs recorded together since the controller last got a message (a round applies several at once)
    recent: tuple[Any, ...] = ()
    _fresh: bool = True
    # message type -> (the last one a controller got, the inputs recorded just before it)
    last_in: dict[str, tuple[Any, tuple[Any, ...]]] = field(default_factory=dict)
    last_any: tuple[Any, tuple[Any, ...]] | None = None
    _rejections_seen: int = 0

    @classmethod
    def for_session(cls, s: RecordingSession) -> ObservedFindings:
        watch = cls(s, exceptions="exceptions" in s.checks, errors="openflow-errors" in s.checks)
        if watch.exceptions:
            for c in s.controllers:
                for path in c.traceback_logs():
                    watch.watches.append((c.name, LogWatch(path)))
        if watch.errors:
            s.world.rejections = []
        return watch

    def observe(self, e: Any) -> None:
        """A recorder observer: remember what a traceback may have followed."""
        if not self.exceptions:
            return
        if getattr(e, "is_input", False):
            self.recent = (e,) if self._fresh else (*self.recent, e)
            self._fresh = False
        elif isinstance(e, ts.ControlToController) and e.msg.get("type") not in ("ECHO_REPLY", "ECHO_REQUEST"):
            self.last_in[str(e.msg.get("type", ""))] = self.last_any = (e, self.recent)
            self._fresh = True

    def poll(self, final: bool = False) -> int:
        """Record what appeared since the last poll; how many new distinct violations."""
        new = 0
        for controller, watch in self.watches:
            for tb in watch.poll(final):
                new += self._exception(controller, tb)
        rejections = self.session.world.rejections
        if rejections is not None and self.errors:
            for r in rejections[self._rejections_seen:]:
                new += self._record(of_check.finding(r.switch, r.controller, r.version, r.msg, r.err_type,
                                                     r.err_code, r.xid, r.seq), {"t": round(r.t, 6)})
            self._rejections_seen = len(rejections)
        return new

    def _exception(self, controller: str, tb: exc_check.Traceback) -> int:
        after, before = self._after(tb)
        return self._record(exc_check.finding(controller, tb, after=after),
                            {"after_inputs": [e.id for e in before]} if before else {})

    def _after(self, tb: exc_check.Traceback) -> tuple[str, tuple[Any, ...]]:
        """What preceded a traceback, in words, and the inputs: the message the crashed handler was
        handling (os-ken names its event; else the last message the controller got) and the inputs
        recorded just before that message (those a round applied together)."""
        kind = _event_message(tb.event)
        got = (self.last_in.get(kind) if kind else None) or self.last_any
        if got is None:
            return (_inputs_words(self.recent) or "before any input"), self.recent
        msg, before = got
        world = self.session.world
        switch = world.by_dpid[msg.dpid].name if msg.dpid in world.by_dpid else msg.dpid
        text = f"the controller had last got {switch}'s {msg.msg.get('type', 'message')} (trace seq {msg.seq})"
        return (f"{_inputs_words(before)}; {text}" if before else text), before

    def _record(self, f: Any, extra: dict) -> int:
        key = (f.invariant, f.details.get("controller"), tuple(f.details["group"]))
        seen = self.counts.get(key)
        if seen is not None:
            seen["count"] += 1
            self._publish()
            return 0
        details = dict(extra)
        v = self.session.record_finding(f, persistent=True, details=details)
        self.counts[key] = {"invariant": f.invariant, "message": f.message, "count": 1, "seq": v.seq}
        self._publish()
        return 1

    def _publish(self) -> None:
        self.session.result.data["observed_counts"] = sorted(self.counts.values(), key=lambda d: d["seq"])

    def annotate(self, violations: list[dict]) -> None:
        """Put into result.json's violations how often each observed one happened in the run."""
        by_seq = {c["seq"]: c["count"] for c in self.counts.values()}
        for v in violations:
            seq = v.get("seq")
            if v["invariant"] in OBSERVED and seq in by_seq:
                v["details"] = dict(v["details"], count=by_seq[seq])

    def found(self) -> list[Any]:
        """The violations recorded so far (what replay's Target.found_in looks through)."""
        return [v for v in self.session.world.observed_violations if v is not None and v.invariant in OBSERVED]
