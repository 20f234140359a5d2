"""One input event in plain words, for summaries and result files.

Apart from the search (api.py), so that a live run that only reports its inputs loads neither the
search nor its process pools.
"""

from __future__ import annotations

from netsleuth.trace import schema as ts
from netsleuth.trace.schema import InputEvent


def describe_input(ev: InputEvent) -> str:
    """One input in plain words."""
    if isinstance(ev, ts.LinkFailure):
        return f"{ev.id}: link {ev.node1}:{ev.port1}-{ev.node2}:{ev.port2} fails"
    if isinstance(ev, ts.LinkRecovery):
        return f"{ev.id}: link {ev.node1}:{ev.port1}-{ev.node2}:{ev.port2} recovers"
    if isinstance(ev, ts.SwitchFailure):
        return f"{ev.id}: switch {ev.switch} fails"
    if isinstance(ev, ts.SwitchRecovery):
        return f"{ev.id}: switch {ev.switch} recovers"
    if isinstance(ev, ts.ControllerCrash):
        return f"{ev.id}: controller {ev.controller} crashes"
    if isinstance(ev, ts.ControllerRecovery):
        return f"{ev.id}: controller {ev.controller} restarts"
    if isinstance(ev, ts.ConfigChange):
        return f"{ev.id}: controller {ev.controller}'s config changes: {ev.edit} (reloaded with SIGHUP)"
    if isinstance(ev, ts.ChannelBlock):
        return f"{ev.id}: channel {ev.switch}<->{ev.controller} blocked"
    if isinstance(ev, ts.ChannelUnblock):
        return f"{ev.id}: channel {ev.switch}<->{ev.controller} unblocked"
    if isinstance(ev, ts.HostMigration):
        return f"{ev.id}: host {ev.host} moves from {ev.old_switch}:{ev.old_port} to {ev.new_switch}:{ev.new_port}"
    if isinstance(ev, ts.TrafficInjection):
        return _traffic_words(ev)
    if isinstance(ev, ts.DataplaneDrop):
        return f"{ev.id}: next packet into {ev.node}:{ev.port} dropped"
    if isinstance(ev, ts.DataplaneDelay):
        return f"{ev.id}: next packet into {ev.node}:{ev.port} delayed {ev.seconds:g} s"
    if isinstance(ev, ts.ControlDelay):
        return f"{ev.id}: next {ev.direction} message on {ev.switch}<->{ev.controller} delayed {ev.seconds:g} s"
    return f"{ev.id}: {type(ev).kind}"


def _traffic_words(ev: ts.TrafficInjection) -> str:
    if ev.dst is not None:
        return f"{ev.id}: host {ev.host} sends to {ev.dst}"
    # to an address no host has (a service's virtual IP): say what was sent
    from netsleuth.model.packet import Packet

    try:
        what = Packet.from_json(ev.packet).summary()
    except (KeyError, TypeError, ValueError):
        what = "a packet to an address no host has"
    return f"{ev.id}: host {ev.host} sends {what}"
