"""Happens-before race detection (SDNRacer) on SDN traces.

``events`` (the event model) -> ``hb`` (HB graph, SDNRacer's rules) ->
``detect`` (races, commutativity, time filter, data dependencies) ->
``job.detect_races`` (one call from a trace file to a :class:`RaceReport`).
OpenFlow 1.0 flow mods are POX's (``poxmatch``, ``commute``); OpenFlow 1.3
operations name the table, group or meter they touch (``flowmod13``,
``commute13``, and ``from_trace13`` for netsleuth's own traces).
"""
