"""Happens-before race detection (SDNRacer) on SDN traces.

``events`` (the event model) -> ``hb`` (HB graph, SDNRacer's rules) ->
``detect`` (races, commutativity, time filter, data dependencies) ->
``job.detect_races`` (one call from a trace file to a :class:`RaceReport`).
"""
