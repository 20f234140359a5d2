"""DEFINED: deterministic execution of distributed control planes.

After Lin et al., "DEFINED: Deterministic Execution for Interactive
Control-Plane Debugging" (a substrate that makes a distributed control
plane's message delivery deterministic: speculative delivery with rollback
to a global ordering, then lockstep replay of the recorded external events
for stepping). Control-plane
code is written as :class:`~netsleuth.defined.node.Node` subclasses that only
talk through a substrate handle; the substrate tags every message with the
paper's (group, estimated delay, origin, origin sequence) and either

* delivers in arrival order (``plain``: the nondeterministic baseline),
* delivers speculatively and rolls back whenever an arrival disagrees with
  the ordering function (``rb``, :mod:`.rollback`), or
* replays only the recorded external events in lockstep (``ls``,
  :mod:`.lockstep`), reproducing the RB execution exactly.

:mod:`.daemons` runs the same ideas on real, unmodified routing daemons
(BIRD 2, FRR) in network namespaces: a relay holds their protocol messages
and delivers them in the ordering function's order, and a virtual clock
(libfaketime) runs their timers.
"""
