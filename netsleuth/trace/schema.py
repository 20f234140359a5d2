"""Trace format version 1: the header and the typed events, as data.

One trace format is shared by fuzzing, replay, minimization, race detection
and export, so its schema lives here as plain frozen dataclasses with no I/O
(see :mod:`netsleuth.trace.io` for the JSON Lines file).

Why the shapes are what they are:

* **No wall-clock anything.** ``t`` is the World's injected clock and the
  header has no timestamp, so the same seed and inputs give a byte-identical
  trace -- that is what makes traces diffable and replay checkable.
* **Input events carry ``id`` and ``deps`` explicitly.** The STS minimizer
  re-derived failure/recovery pairs from fingerprints at pruning time and
  mangled them on round trips; storing the dependency makes pruning a lookup.
* **Internal events carry ``fp``**, a masked fingerprint (see
  :mod:`netsleuth.trace.fingerprint`) so "the same" message can be matched
  across runs whose xids, cookies and buffer ids differ.
* **A kind is a registered class.** Adding one is a decorator plus a
  dataclass; the generic codec (:mod:`netsleuth.trace.fieldcodec`) derives validation from the type hints,
  so a new kind cannot forget its (de)serializer.

Field values are JSON-shaped: ``dict`` fields hold JSON values (lists, not
tuples) and are stored as they are; ``tuple`` fields are written as lists and
read back as tuples, so ``event_from_json(event_to_json(e)) == e``.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from netsleuth.errors import TraceFormatError
from netsleuth.trace.fieldcodec import decode_fields, encode_fields

FORMAT = "netsleuth-trace"
VERSION = 1

Fingerprint = tuple
"""A masked fingerprint: a (nested) tuple of str/int/float/bool/None; hashable."""

# --------------------------------------------------------------------- header
@dataclass(frozen=True, slots=True, kw_only=True)
class TraceHeader:
    """The first line of every trace: what produced it and against what.

    ``topology`` is a ``Topology.to_json()`` dict, kept opaque here so the
    trace layer does not depend on how topologies are modelled.
    """

    format: str = FORMAT
    version: int = VERSION
    topology: dict
    topology_spec: str
    controller: str
    seed: int | None
    tool_version: str
    command: str = ""
    extra: dict = field(default_factory=dict)
    # switch name -> the OpenFlow version it negotiated ("1.0" or "1.3"); a switch not named
    # (every switch of a trace written before netsleuth spoke 1.3) ran OpenFlow 1.0.
    openflow: dict = field(default_factory=dict)


# --------------------------------------------------------------------- events
@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every trace event: its position and its injected-clock time."""

    kind: ClassVar[str] = ""
    is_input: ClassVar[bool] = False

    seq: int
    t: float


@dataclass(frozen=True, slots=True, kw_only=True)
class InputEvent(Event):
    """An event the tool caused (and delta debugging may prune).

    ``id`` is stable across minimization ("i7"); ``deps`` lists the ids of the
    inputs this one only makes sense after (a recovery after its failure).
    """

    is_input: ClassVar[bool] = True

    id: str
    deps: tuple[str, ...] = ()


EVENT_KINDS: dict[str, type[Event]] = {}
"""kind -> event class; filled by :func:`event_kind`. Treat as read-only."""

E = typing.TypeVar("E", bound=type[Event])


def event_kind(kind: str) -> Callable[[E], E]:
    """Class decorator registering an event dataclass under ``kind``.

    Apply it outside ``@dataclass`` (the dataclass must exist first)::

        @event_kind("ping")
        @dataclass(frozen=True, slots=True, kw_only=True)
        class PingResult(Event):
            src: str
            ...
    """

    def register(cls: E) -> E:
        if not (isinstance(cls, type) and issubclass(cls, Event) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"@event_kind({kind!r}) needs an Event dataclass, got {cls!r}")
        if kind in EVENT_KINDS:
            raise ValueError(f"event kind {kind!r} is already registered by {EVENT_KINDS[kind].__name__}")
        cls.kind = kind
        EVENT_KINDS[kind] = cls
        return cls

    return register


@event_kind("of_to_switch")
@dataclass(frozen=True, slots=True, kw_only=True)
class ControlToSwitch(Event):
    """A controller->switch OpenFlow message delivered to the switch.

    ``msg`` is the codec's JSON form {"type", "xid", "body": os-ken jsondict}.
    """

    conn: int
    controller: str
    dpid: int
    msg: dict
    fp: Fingerprint


@event_kind("of_to_controller")
@dataclass(frozen=True, slots=True, kw_only=True)
class ControlToController(Event):
    """A switch->controller OpenFlow message handed to the controller."""

    conn: int
    controller: str
    dpid: int
    msg: dict
    fp: Fingerprint


@event_kind("switch_connected")
@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchConnected(Event):
    """A switch finished the OpenFlow handshake with a controller."""

    dpid: int
    conn: int
    controller: str


@event_kind("switch_disconnected")
@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchDisconnected(Event):
    """A switch lost its control connection (``reason`` says why). ``redial``: the controller's end
    closed it and the switch dials again, as Open vSwitch does; a view built from the trace counts the
    switch as connected for a grace period, as the live run did."""

    dpid: int
    conn: int
    controller: str
    reason: str
    redial: bool = field(default=False, metadata={"omit_default": True})


@event_kind("traffic")
@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficInjection(InputEvent):
    """Host ``host`` sends ``packet`` (``Packet.to_json()``), aimed at host ``dst``."""

    host: str
    packet: dict
    dst: str | None


@event_kind("packet")
@dataclass(frozen=True, slots=True, kw_only=True)
class PacketArrival(Event):
    """A dataplane packet arriving at a switch or host port; ``pid`` is its lineage."""

    node: str
    port: int
    pid: int
    packet: dict
    fp: Fingerprint


@event_kind("ping")
@dataclass(frozen=True, slots=True, kw_only=True)
class PingResult(Event):
    """The outcome of one ping; ``rtt`` in injected-clock seconds, None if lost."""

    src: str
    dst: str
    ok: bool
    rtt: float | None


@event_kind("violation")
@dataclass(frozen=True, slots=True, kw_only=True)
class Violation(Event):
    """An invariant violation; ``persistent`` once it outlived its threshold."""

    invariant: str
    message: str
    persistent: bool
    hosts: tuple[str, ...]
    switches: tuple[str, ...]
    details: dict


@event_kind("controller_event")
@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerEvent(Event):
    """Controller lifecycle and logs: ``what`` is "started", "exited" or "log_error"."""

    controller: str
    what: str
    detail: str


# ---------------------------------------------------------------------- inputs
# What the fuzzer injects and a minimizer prunes. Dependencies are explicit
# (``deps``): a recovery depends on its failure, a host's migration on the
# host's previous one, so no one has to re-derive them from fingerprints.
@event_kind("switch_failure")
@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchFailure(InputEvent):
    """The switch crashes: control connections torn down, its links dark, its state lost."""

    switch: str


@event_kind("switch_recovery")
@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchRecovery(InputEvent):
    """The switch reboots with an empty flow table and reconnects to its controllers."""

    switch: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _LinkInput(InputEvent):
    """The link between (node1, port1) and (node2, port2).

    ``one_way``: only the direction from (node1, port1) to (node2, port2)
    fails or recovers, and only node1's port goes down -- how STS cut links
    (its links are one-way objects; the far end keeps sending into the
    link). Written to the trace only when true, so other traces read as before.
    """

    node1: str
    port1: int
    node2: str
    port2: int
    one_way: bool = field(default=False, metadata={"omit_default": True})


@event_kind("link_failure")
@dataclass(frozen=True, slots=True, kw_only=True)
class LinkFailure(_LinkInput):
    """The link goes down (PORT_STATUS from its switch ends)."""


@event_kind("link_recovery")
@dataclass(frozen=True, slots=True, kw_only=True)
class LinkRecovery(_LinkInput):
    """The link comes back up."""


@event_kind("controller_crash")
@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerCrash(InputEvent):
    """The controller process is killed (SIGKILL)."""

    controller: str


@event_kind("controller_recovery")
@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerRecovery(InputEvent):
    """The controller process is started again; switches reconnect."""

    controller: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _ChannelInput(InputEvent):
    switch: str
    controller: str


@event_kind("channel_block")
@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelBlock(_ChannelInput):
    """Messages between ``switch`` and ``controller`` are held (both directions)."""


@event_kind("channel_unblock")
@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelUnblock(_ChannelInput):
    """Held messages flow again, in their original order."""


@event_kind("host_migration")
@dataclass(frozen=True, slots=True, kw_only=True)
class HostMigration(InputEvent):
    """The host detaches from (old_switch, old_port) and attaches to (new_switch, new_port)."""

    host: str
    old_switch: str
    old_port: int
    new_switch: str
    new_port: int


@event_kind("dataplane_drop")
@dataclass(frozen=True, slots=True, kw_only=True)
class DataplaneDrop(InputEvent):
    """The next packet matching ``fp`` on the link into (node, port) is lost."""

    node: str
    port: int
    fp: Fingerprint


@event_kind("dataplane_delay")
@dataclass(frozen=True, slots=True, kw_only=True)
class DataplaneDelay(InputEvent):
    """The next packet matching ``fp`` on the link into (node, port) is held for ``seconds``."""

    node: str
    port: int
    fp: Fingerprint
    seconds: float


@event_kind("control_delay")
@dataclass(frozen=True, slots=True, kw_only=True)
class ControlDelay(InputEvent):
    """A message on a control channel is held for ``seconds`` (later ones may overtake it)."""

    switch: str
    controller: str
    direction: str  # "to_switch" | "to_controller"
    fp: Fingerprint
    seconds: float


@event_kind("config_change")
@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChange(InputEvent):
    """An operator rewrites ``controller``'s configuration file and tells it to reload (SIGHUP).

    ``config`` is the whole new file, never a diff: pruning any earlier change
    (minimization) leaves every later one meaning exactly what it meant, so
    any subset of a trace's config changes replays. ``sha256`` is the hash of
    ``config``'s UTF-8 bytes (what the controller reads after a replay must
    hash the same); ``edit`` says in words what changed against the file before.
    """

    controller: str
    edit: str
    config: str
    sha256: str


# ------------------------------------------------- DEFINED (netsleuth.defined)
# Kinds written by `netsleuth defined run` and read by `netsleuth defined step`.
@event_kind("defined_external")
@dataclass(frozen=True, slots=True, kw_only=True)
class DefinedExternal(InputEvent):
    """An external event at a DEFINED node, as DEFINED-RB stamped it.

    ``group`` is the beacon group the node was in and ``oseq`` the node's
    origin sequence number; ``event`` is the node-level event (e.g.
    {"type": "link_down", "peer": "n03"}). LS replays only these.
    """

    node: str
    group: int
    oseq: int
    event: dict


# ------------------------------------------------- model checking (netsleuth.nice)
# Kinds written by `netsleuth check` counterexamples and re-executed by
# `netsleuth replay` (the header's controller is then an in-process `app:` spec).
@event_kind("mc_step")
@dataclass(frozen=True, slots=True, kw_only=True)
class McStep(Event):
    """One transition of a model-checking counterexample, in order from the initial state.

    ``transition`` is {"kind": "pkt", "args": [0]} (see netsleuth.nice.system);
    ``what`` says it in words, and a replay checks it is the same again.
    """

    step: int
    transition: dict
    what: str


def event_to_json(ev: Event) -> dict[str, Any]:
    """The JSON object for one event: its fields plus ``"kind"``."""
    kind = type(ev).kind
    if EVENT_KINDS.get(kind) is not type(ev):
        raise TraceFormatError(
            f"cannot record {type(ev).__name__}: it is not a registered event kind",
            "decorate the class with @event_kind(...) in netsleuth.trace.schema",
        )
    out = encode_fields(ev, f"{kind!r} event seq={getattr(ev, 'seq', '?')}")
    out["kind"] = kind
    return out


def event_from_json(d: Any) -> Event:
    """Validate one JSON object and build its event; TraceFormatError if it is not one."""
    if not isinstance(d, dict):
        raise TraceFormatError(f"an event must be a JSON object, got {type(d).__name__}",
                               "each line after the header is one event object")
    kind = d.get("kind")
    if kind is None:
        if "format" in d:
            raise TraceFormatError("a second trace header appears among the events",
                                   "traces cannot be concatenated; split the file at this line")
        raise TraceFormatError("event lacks its 'kind'", "add the event's kind, e.g. \"kind\": \"packet\"")
    cls = EVENT_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise TraceFormatError(
            f"unknown event kind {kind!r}",
            f"known kinds: {', '.join(sorted(EVENT_KINDS))}; a newer netsleuth may have written this trace",
        )
    return decode_fields(cls, d, f"{kind!r} event", skip=("kind",))  # type: ignore[no-any-return]  # an instance of cls


def header_to_json(header: TraceHeader) -> dict[str, Any]:
    """The JSON object for the header line."""
    return encode_fields(header, "trace header")


def header_from_json(d: Any) -> TraceHeader:
    """Validate a header object: right format, a version this netsleuth reads."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise TraceFormatError(
            "the first line is not a netsleuth trace header",
            f'a trace starts with {{"format": "{FORMAT}", "version": {VERSION}, ...}}; '
            "is this the right file?",
        )
    version = d.get("version")
    if type(version) is not int or version < 1:
        raise TraceFormatError(f"trace header has an invalid version {version!r}",
                               f"the version must be an integer >= 1 (this netsleuth writes {VERSION})")
    if version > VERSION:
        raise TraceFormatError(
            f"the trace is format version {version}, newer than the {VERSION} this netsleuth reads",
            "upgrade netsleuth (pip install -U netsleuth)",
        )
    return decode_fields(TraceHeader, d, "trace header")  # type: ignore[no-any-return]  # decode_fields builds a TraceHeader


@dataclass(frozen=True, slots=True)
class Trace:
    """A whole trace in memory: its header and its events in file order."""

    header: TraceHeader
    events: list[Event]


__all__ = [
    "FORMAT", "VERSION", "Fingerprint", "TraceHeader", "Event", "InputEvent", "EVENT_KINDS",
    "event_kind", "event_to_json", "event_from_json", "header_to_json", "header_from_json", "Trace",
    "ControlToSwitch", "ControlToController", "SwitchConnected", "SwitchDisconnected",
    "TrafficInjection", "PacketArrival", "PingResult", "Violation", "ControllerEvent",
    "SwitchFailure", "SwitchRecovery", "LinkFailure", "LinkRecovery", "ControllerCrash",
    "ControllerRecovery", "ChannelBlock", "ChannelUnblock", "HostMigration", "DataplaneDrop",
    "DataplaneDelay", "ControlDelay", "ConfigChange", "DefinedExternal",
    "McStep",
]
