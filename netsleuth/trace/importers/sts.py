"""Import an STS ``events.trace`` (SDN Troubleshooting System) as a netsleuth trace.

An STS trace is JSON Lines: one ``Event.to_json()`` object per line, its type
in ``"class"`` (the class names of STS's ``sts/replay_event.py``), a unique
``"label"`` (``e<N>`` for inputs, ``i<N>`` for internal events), ``"time"`` as
``[seconds, microseconds]`` of wall-clock time, and -- depending on the STS
version -- ``"round"``, ``"dependent_labels"``, ``"prunable"``,
``"fingerprint"`` and the class's own fields. Three generations are read:
early traces (no ``round``; ``TrafficInjection`` without its packet;
controller ids as ``[ip, port]``; OpenFlow messages only as fingerprints),
2013 traces (``b64_packet`` holds each OpenFlow message's bytes) and late
traces (``round``, ``TrafficInjection.dp_event``, ``DataplaneDrop`` as an
input with ``dpid``).

What becomes what:

* Inputs: ``SwitchFailure``/``SwitchRecovery`` -> ``switch_failure``/
  ``switch_recovery``; ``LinkFailure``/``LinkRecovery`` -> ``link_*`` with
  ``one_way`` (STS cut only the start -> end direction of a link);
  ``ControllerFailure``/``ControllerRecovery`` -> ``controller_crash``/
  ``controller_recovery``; ``ControlChannelBlock``/``Unblock`` ->
  ``channel_block``/``channel_unblock``; ``HostMigration`` ->
  ``host_migration``; ``TrafficInjection`` (with ``dp_event``) -> ``traffic``;
  ``DataplaneDrop`` -> ``dataplane_drop``. Switch dpid N is ``s<N>``, host id
  N is ``h<N>`` (other host ids get the next free ``h<k>``; the mapping is in
  the header's ``extra``).
* Dependencies are explicit, as netsleuth stores them: a recovery depends on
  the failure of the same thing, a host's migration on that host's previous
  one, and STS's ``dependent_labels`` (``A.dependent_labels = [B]``: pruning A
  prunes B) become ``B.deps`` containing A's id.
* ``ControlMessageReceive``/``ControlMessageSend`` (a switch receives from /
  sends to a controller) -> ``of_to_switch``/``of_to_controller``, when the
  line carries the message bytes (``b64_packet``) and the caller passes an
  OpenFlow decoder (the trace layer does not import the codec).
* ``ConnectToControllers`` -> a ``switch_connected`` for every switch and
  every controller (STS connects each switch to all of them); a recovered
  switch reconnects to the live controllers and a recovered controller gets
  every live switch back, as in STS.
* ``InvariantViolation`` -> ``violation`` (named after the last
  ``CheckInvariants`` before it, or the config's check). STS's liveness check
  asks the controller processes whether they run: a controller it names that
  no input crashed is recorded as a ``controller_event`` "exited" just
  before the violation, so the rebuilt state knows that process is gone.
* Everything else (``WaitTime``, ``CheckInvariants``, controller log
  statements, ``gettimeofday`` answers, dataplane permits, controller-pair
  partitions, unknown classes, ...) is counted in the report's ``skipped``
  with the reason, never silently dropped.

Times become injected-clock seconds since the first line. ``path`` may be the
experiment folder or a trace in it; the config files beside the trace
(``orig_config.py``, ``mcs_config.py``, ``replay_config.py``, read by
:mod:`~netsleuth.trace.importers.sts_config` without running them) give the
topology (STS's ``MeshTopology``/``FatTree`` with its own port and host
numbering: ``sts-mesh,N``/``sts-fattree,PODS``), the invariant check and the
controllers. Without a given topology or a config naming one, a topology is
inferred from what the trace mentions (switches, links of link failures,
each host's location before its first migration, host addresses from
injected packets); the header says so.

The importer is in layers: ``sts_read.py`` reads the lines and holds the
report, ``sts_names.py`` names what the trace mentions (and infers the
topology), ``sts_convert.py`` converts the events; this module finds the
trace and its config and runs them.
"""

from __future__ import annotations

from pathlib import Path

from netsleuth.errors import TraceFormatError
from netsleuth.model.addr import int_to_ip, ip_to_int, mac_to_int
from netsleuth.model.topology import Topology, parse_topo
from netsleuth.trace.importers.sts_config import read_sts_config, sts_topology_spec
from netsleuth.trace.importers.sts_convert import _Importer
from netsleuth.trace.importers.sts_read import ImportReport, OpenFlowDecoder, _read, _Rec

__all__ = ["import_sts", "sts_trace_in"]



# --------------------------------------------------------------------- report


# --------------------------------------------------------------------- reading








# --------------------------------------------------------------------- helpers






# --------------------------------------------------------------------- importer


def _with_recorded_addresses(topo: Topology, records: list[_Rec], notes: list[str]) -> Topology:
    """The config's topology with the host IPs the trace shows (matched by MAC).

    STS changed its hosts' IP scheme over time (``10.<dpid>.<port>.2`` before
    MeshTopology took an ``ip_format_str``, ``123.123.<dpid>.<port>`` after) and
    a config may override it; the MACs never changed. The interfaces recorded
    with each ``TrafficInjection`` say which scheme the run used.
    """
    seen: dict[int, int] = {}
    for rec in records:
        dp = rec.d.get("dp_event") if rec.cls == "TrafficInjection" else None
        intf = dp.get("interface") if isinstance(dp, dict) else None
        if not isinstance(intf, dict) or not isinstance(intf.get("hw_addr"), str) or not intf.get("ips"):
            continue
        try:
            seen.setdefault(mac_to_int(intf["hw_addr"]), ip_to_int(str(intf["ips"][0])))
        except (ValueError, TypeError):
            continue
    data = topo.to_json()
    changed = []
    taken = {h["ip"] for h in data["hosts"]}
    for h in data["hosts"]:
        ip = seen.get(mac_to_int(h["mac"]))
        if ip is not None and int_to_ip(ip) != h["ip"] and int_to_ip(ip) not in taken:
            changed.append(f"{h['name']} {h['ip']} -> {int_to_ip(ip)}")
            taken.discard(h["ip"])
            h["ip"] = int_to_ip(ip)
            taken.add(h["ip"])
    if not changed:
        return topo
    notes.append("host addresses as the trace's injected packets show them: " + ", ".join(changed))
    return Topology.from_json(data)


def sts_trace_in(path: str | Path) -> Path:
    """The trace an STS path names: the file itself, or a folder's ``events.trace`` (else ``mcs.trace``)."""
    p = Path(path)
    if not p.is_dir():
        return p
    for name in ("events.trace", "mcs.trace"):
        if (p / name).is_file():
            return p / name
    raise TraceFormatError(f"{p} holds no events.trace or mcs.trace",
                           "point at an STS experiment folder (experiments/<name>/) or at its trace file")


def import_sts(path: str | Path, *, topology: Topology | None = None,
               decode_openflow: OpenFlowDecoder | None = None) -> ImportReport:
    """Convert the STS trace at ``path`` into a netsleuth trace plus a report.

    ``path``: an experiment folder or a trace file (its folder's config
    files are read either way). ``topology``: the network the trace was
    recorded on (switch dpids and host names are looked up in it); without
    one, the topology the config names, else one inferred from the trace and
    marked as inferred. ``decode_openflow`` turns raw OpenFlow
    bytes into the codec's JSON form (``msg_to_json(decode(b))``); without it
    the trace's OpenFlow messages are reported as skipped. Raises
    :class:`TraceFormatError` (naming the line and the fix) on a malformed line.
    """
    p = sts_trace_in(path)
    records, blank = _read(p)
    config = read_sts_config(p.parent)
    notes: list[str] = []
    if topology is None:
        spec, notes = sts_topology_spec(config)
        if spec is not None:
            topology = parse_topo(spec)
            notes.insert(0, f"topology {spec} from the config's {config.topology_class}"
                            f"({config.topology_params or ''})")
        if topology is not None:
            topology = _with_recorded_addresses(topology, records, notes)
    report = _Importer(p, records, blank, topology, decode_openflow, config).run()
    report.notes[:0] = notes
    return report
