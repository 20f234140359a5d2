"""Topologies, as users import them: the value, the spec parser and the files.

The topology lives in three modules with one job each -- the value
(:mod:`netsleuth.model.topology_graph`), the named shapes and the Mininet-style
spec parser (:mod:`netsleuth.model.topo_builders`), and JSON/GraphML files
(:mod:`netsleuth.model.topology_io`). This module is the one place users,
tests and the rest of netsleuth import them from, so ``from
netsleuth.model.topology import Topology, parse_topo`` keeps working however
the parts are arranged; it imports the three and none of them imports it,
so the arrangement has no circle.
"""

from __future__ import annotations

from netsleuth.model.topo_builders import MAX_NODES, parse_topo
from netsleuth.model.topology_graph import (
                                            HOST,
                                            IP_BASE,
                                            JSON_FIX,
                                            JSON_FORMAT,
                                            JSON_VERSION,
                                            KNOWN_FORMS,
                                            OFPP_MAX,
                                            SWITCH,
                                            HostSpec,
                                            Link,
                                            SwitchSpec,
                                            Topology,
                                            build_from_records,
)
from netsleuth.model.topology_io import (
                                            load_topology_file,
                                            save_topology,
                                            topology_from_graphml,
                                            topology_graphml_text,
                                            topology_json_text,
)

__all__ = ["HOST", "IP_BASE", "JSON_FIX", "JSON_FORMAT", "JSON_VERSION", "KNOWN_FORMS", "MAX_NODES", "OFPP_MAX",
           "SWITCH", "HostSpec", "Link", "SwitchSpec", "Topology", "build_from_records", "load_topology_file",
           "parse_topo", "save_topology", "topology_from_graphml", "topology_graphml_text", "topology_json_text"]
