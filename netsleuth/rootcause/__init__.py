"""Root-causing tools that work on a recorded trace (STS thesis section 5.0.8).

A minimal trace alone often does not show *why* a bug happens; these tools
look inside one: ``pcap`` (the control channel for Wireshark), ``diff``
(what two runs did differently), ``reduce`` (which flow_mods explain the
tables at the violation), ``trace-packet`` (one packet's path), ``step`` and
``viz``. Each tool is one module; :mod:`netsleuth.rootcause.cli` wires them up.
"""
