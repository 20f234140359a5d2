"""Happens-before race detection (SDNRacer) on SDN traces.

``events`` (the event model) -> ``hb`` (HB graph, SDNRacer's rules) ->
``detect`` (races, commutativity, time filter, data dependencies) ->
``job.detect_races`` (one call from a trace file to a :class:`RaceReport`).
OpenFlow 1.0 flow mods are POX's (``poxmatch``, ``commute``); OpenFlow 1.3
operations name the table, group or meter they touch (``of13.flowmod``,
``of13.commute``, and ``of13.from_trace`` for netsleuth's own traces).
"""
