"""DEFINED on real routing daemons: unmodified BIRD 2 or FRR in network namespaces.

netsleuth owns the links and the clock. Every router runs in its own network
namespace; every link is a pair of veths whose middle ends sit in one relay
namespace, where :mod:`.relay` carries each frame and holds the routing
protocol's messages until the ordering function says which goes next.
Timers run on a virtual clock (libfaketime's timestamp file, :mod:`.clock`).

The layers, lowest first:

* :mod:`.spec` -- the network as data (routers, links, BGP/RIP intent);
* :mod:`.config` -- the per-router configuration files for each daemon (pure text);
* :mod:`.wire` and :mod:`.relaycore` -- frames and BGP messages in, decisions out (sans-I/O);
* :mod:`.control` -- reading a daemon's own tables through its control socket;
* :mod:`.host` -- the edge: namespaces, veths, daemons, the guard and teardown;
* :mod:`.net` -- a running network driven one DEFINED message at a time;
* :mod:`.explore` -- the MED case: every order of a group, and the DEFINED order.
"""
