"""Concolic execution of controller apps on z3 (NICE's discover_packets / discover_stats).

``sym``       symbolic proxies (SymInt/SymBool, instrumented dicts and sets) and the path log
``engine``    the path-exploration loop (negate, solve incrementally, run)
``packet``    the symbolic packet, header variables and domain constraints
``coverage``  branch-arc coverage of the app's code
``discover``  discover_packets / discover_stats and the model checker's memoized generator
"""

from netsleuth.nice.concolic.containers import instrument
from netsleuth.nice.concolic.discover import (
                                              Discovery,
                                              PacketDiscoverer,
                                              StatsDiscoverer,
                                              attach,
                                              discover_packets,
                                              discover_stats,
)
from netsleuth.nice.concolic.engine import Exploration, explore
from netsleuth.nice.concolic.packet import Domain, SymPacket, concrete_packet
from netsleuth.nice.concolic.sym import SymBool, SymInt, Tracer

__all__ = ["Discovery", "Domain", "Exploration", "PacketDiscoverer", "StatsDiscoverer", "SymBool", "SymInt",
           "SymPacket", "Tracer", "attach", "concrete_packet", "discover_packets", "discover_stats", "explore",
           "instrument"]
