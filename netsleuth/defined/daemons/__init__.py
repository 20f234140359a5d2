"""DEFINED on real routing daemons: unmodified BIRD 2 or FRR in network namespaces.

netsleuth owns the links and the clock. Every router runs in its own network
namespace; every link is a pair of veths whose middle ends sit in one relay
namespace, where :mod:`.relay` carries each frame and holds the routing
protocol's messages until the ordering function says which goes next.
Timers run on a virtual clock (libfaketime's timestamp file, :mod:`.clock`).

The layers, lowest first:

* :mod:`.spec` -- the network as data (routers, links, BGP/RIP/OSPF intent);
* :mod:`.config` -- the per-router configuration files for each daemon (pure text);
* :mod:`.wire` and :mod:`.relaycore` -- frames and BGP/RIP/OSPF messages in, decisions out (sans-I/O);
* :mod:`.control` and :mod:`.reader` -- a daemon's own state through its control socket;
* :mod:`.host`, :mod:`.relay` and :mod:`.clock` -- the edge: namespaces, veths, daemons, the
  guard and teardown; the relay process; the virtual clock's file;
* :mod:`.net` -- a running network driven one DEFINED message (or one virtual second) at a time;
* :mod:`.scenarios`, :mod:`.explore`, :mod:`.rip` -- the MED case under every order and under the
  ordering function, and the RIP timeout on the virtual clock;
* :mod:`.kroutes` and :mod:`.routecheck` -- each namespace's kernel table over rtnetlink, and the
  loops, blackholes and unreachable loopbacks in those tables (pure);
* :mod:`.events`, :mod:`.replay` and :mod:`.fuzz` -- recorded external events (links failing and
  recovering, routers restarting), a run driven by them with every delivery and table change kept
  and checked, and fuzz and minimize over them;
* :mod:`.console`, :mod:`.cli` and :mod:`.cli_events` -- ``netsleuth defined step|run|fuzz|minimize --daemon``.
"""
