"""OpenFlow 1.3 semantics as a sans-I/O library: the second pipeline of the model.

The 1.0 model (``model/match.py``, ``model/flowtable.py``, ``model/switch.py``)
stays as it is; OpenFlow 1.3 differs enough (OXM matches with prerequisites,
instructions, multiple tables, an action set, groups, meters) that it is a
pipeline of its own rather than options on the 1.0 one.  Each module has
one job:

* ``frame``: a packet with VLAN and MPLS stacks, IPv6, ICMPv6/ND and SCTP,
  exact wire bytes both ways.
* ``fields``: the OXM field values of a frame (what a match sees).
* ``oxm``: OXM matches (validation with the spec's errors, matching,
  covers/overlaps, canonical order, os-ken and ovs-ofctl forms).
* ``actions`` / ``instructions`` / ``actionset``: what a rule does.
* ``flowtable``: the N flow tables and flow_mod semantics.
* ``groups`` / ``meters``: group and meter tables.
* ``pipeline``: a packet through the tables to its outputs.
"""
