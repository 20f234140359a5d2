"""netsleuth's one trace format: typed events, JSON Lines files, fingerprints.

Produced by fuzzing, model checking and importers; consumed by replay,
minimization, race detection and export. Imports only ``netsleuth.model``.

The names below are imported on first use: a module that needs one part of the
package (the controller spec a header names, the event schema) does not load the
reader, whose validation loads the OpenFlow codec and os-ken's parsers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netsleuth import lazy_attribute

if TYPE_CHECKING:
    from netsleuth.trace.fingerprint import of_fingerprint, packet_fingerprint
    from netsleuth.trace.io import TraceWriter, iter_trace, read_header, read_trace, write_trace
    from netsleuth.trace.schema import (
        EVENT_KINDS,
        FORMAT,
        VERSION,
        ControllerEvent,
        ControlToController,
        ControlToSwitch,
        Event,
        Fingerprint,
        InputEvent,
        PacketArrival,
        PingResult,
        SwitchConnected,
        SwitchDisconnected,
        Trace,
        TraceHeader,
        TrafficInjection,
        Violation,
        event_from_json,
        event_kind,
        event_to_json,
        header_from_json,
        header_to_json,
    )

_WHERE = {
    **dict.fromkeys(("of_fingerprint", "packet_fingerprint"), "fingerprint"),
    **dict.fromkeys(("TraceWriter", "iter_trace", "read_header", "read_trace", "write_trace"), "io"),
    **dict.fromkeys(("EVENT_KINDS", "FORMAT", "VERSION", "ControllerEvent", "ControlToController", "ControlToSwitch",
                     "Event", "Fingerprint", "InputEvent", "PacketArrival", "PingResult", "SwitchConnected",
                     "SwitchDisconnected", "Trace", "TraceHeader", "TrafficInjection", "Violation",
                     "event_from_json", "event_kind", "event_to_json", "header_from_json", "header_to_json"),
                    "schema"),
}

__all__ = [
    "FORMAT", "VERSION", "Fingerprint", "TraceHeader", "Trace", "Event", "InputEvent", "EVENT_KINDS",
    "event_kind", "event_to_json", "event_from_json", "header_to_json", "header_from_json",
    "ControlToSwitch", "ControlToController", "SwitchConnected", "SwitchDisconnected",
    "TrafficInjection", "PacketArrival", "PingResult", "Violation", "ControllerEvent",
    "TraceWriter", "write_trace", "read_trace", "read_header", "iter_trace",
    "of_fingerprint", "packet_fingerprint",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _WHERE, name)
