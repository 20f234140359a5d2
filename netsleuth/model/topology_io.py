"""Topology files: read and write a :class:`~netsleuth.model.topology.Topology` as JSON or GraphML.

The JSON form is the Topology's own (:meth:`Topology.to_json` /
:meth:`Topology.from_json`); this module adds the file around it (one
record per line, so files diff well and stay small for big fat-trees) and
GraphML both ways, as networkx writes it, so topologies drawn in other
tools (Topology Zoo, yEd) load as they are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netsleuth.errors import UnknownTopologyError
from netsleuth.model.topology_graph import HOST, JSON_FIX, KNOWN_FORMS, SWITCH, Topology, build_from_records

__all__ = ["load_topology_file", "save_topology", "topology_json_text", "topology_graphml_text",
           "topology_from_graphml"]

_GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"


def _err(problem: str, fix: str) -> UnknownTopologyError:
    return UnknownTopologyError(problem, fix)


# --------------------------------------------------------------------------- writing


def save_topology(topo: Topology, path: str | Path) -> Path:
    """Write the topology: GraphML if the path ends in ``.graphml``, JSON otherwise."""
    path = Path(path)
    if path.suffix.lower() == ".graphml":
        path.write_text(topology_graphml_text(topo), encoding="utf-8")
    else:
        path.write_text(topology_json_text(topo), encoding="utf-8")
    return path


def topology_json_text(topo: Topology) -> str:
    """The JSON file's text: one record per line (readable, diff-friendly, small for big fat-trees)."""
    d = topo.to_json()
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(d[k])}" for k in ("format", "version", "name", "spec"))
    parts = [head]
    for key in ("switches", "hosts", "links"):
        items = ",\n".join("    " + json.dumps(x) for x in d[key])
        parts.append(f'  "{key}": [\n{items}\n  ]' if items else f'  "{key}": []')
    return "{\n" + ",\n".join(parts) + "\n}\n"


def topology_graphml_text(topo: Topology) -> str:
    """The GraphML file's text.

    Written in link order with source=node1/target=node2, so the file
    round-trips exactly; networkx.read_graphml reads it too.
    """
    esc = _xml_escape
    d = topo.to_json()
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        f'<graphml xmlns="{_GRAPHML_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="{_GRAPHML_NS} {_GRAPHML_NS}/1.0/graphml.xsd">',
        '  <key id="g_name" for="graph" attr.name="name" attr.type="string" />',
        '  <key id="g_spec" for="graph" attr.name="spec" attr.type="string" />',
        '  <key id="kind" for="node" attr.name="kind" attr.type="string" />',
        '  <key id="dpid" for="node" attr.name="dpid" attr.type="long" />',
        '  <key id="mac" for="node" attr.name="mac" attr.type="string" />',
        '  <key id="ip" for="node" attr.name="ip" attr.type="string" />',
        '  <key id="port1" for="edge" attr.name="port1" attr.type="int" />',
        '  <key id="port2" for="edge" attr.name="port2" attr.type="int" />',
        '  <graph edgedefault="undirected">',
        f'    <data key="g_name">{esc(d["name"])}</data>',
        f'    <data key="g_spec">{esc(d["spec"])}</data>',
    ]
    for s in d["switches"]:
        lines.append(f'    <node id="{esc(s["name"])}"><data key="kind">switch</data>'
                     f'<data key="dpid">{s["dpid"]}</data></node>')
    for h in d["hosts"]:
        lines.append(f'    <node id="{esc(h["name"])}"><data key="kind">host</data>'
                     f'<data key="mac">{h["mac"]}</data><data key="ip">{h["ip"]}</data></node>')
    for i, (node1, port1, node2, port2) in enumerate(d["links"]):
        lines.append(f'    <edge id="e{i}" source="{esc(node1)}" target="{esc(node2)}">'
                     f'<data key="port1">{port1}</data><data key="port2">{port2}</data></edge>')
    lines += ["  </graph>", "</graphml>", ""]
    return "\n".join(lines)


def _xml_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


# --------------------------------------------------------------------------- reading GraphML

_GRAPHML_FIX = ('write GraphML as networkx.write_graphml does, with node data kind ("switch"/"host", default switch), '
                "optional dpid/mac/ip, and edge data port1/port2 (port1 belongs to the source)")


def _graphml_value(text: str | None, typ: str) -> Any:
    text = (text or "").strip()
    if typ in ("int", "long"):
        return int(text)
    if typ in ("float", "double"):
        return float(text)
    if typ == "boolean":
        return text.lower() in ("true", "1")
    return text


def _graphml_int(value: Any, what: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            pass
    raise _err(f"GraphML {what} {value!r} is not an integer", _GRAPHML_FIX)


def topology_from_graphml(text: str, where: str) -> Topology:
    """Read GraphML text (``where`` names its file in error messages)."""
    import xml.etree.ElementTree as ET  # here: only GraphML needs an XML parser; importing it costs every command

    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise _err(f"{where} is not valid GraphML XML: {exc}", _GRAPHML_FIX) from exc
    ns = ""
    if root.tag.startswith("{"):
        ns = root.tag[: root.tag.index("}") + 1]
    if root.tag != f"{ns}graphml":
        raise _err(f"{where} is not GraphML (root element is {root.tag!r})", _GRAPHML_FIX)
    keys: dict[str, tuple[str, str, str]] = {}  # id -> (for, attr name, type)
    defaults: dict[str, dict[str, Any]] = {"node": {}, "edge": {}, "graph": {}}
    for key in root.iter(f"{ns}key"):
        kid = key.get("id", "")
        scope = key.get("for", "all")
        attr = key.get("attr.name", kid)
        typ = key.get("attr.type", "string")
        keys[kid] = (scope, attr, typ)
        dflt = key.find(f"{ns}default")
        if dflt is not None:
            for s in (("node", "edge", "graph") if scope == "all" else (scope,)):
                if s in defaults:
                    defaults[s][attr] = _graphml_value(dflt.text, typ)
    graph = root.find(f"{ns}graph")
    if graph is None:
        raise _err(f"{where} has no <graph> element", _GRAPHML_FIX)

    def data_of(elem: ET.Element, scope: str) -> dict[str, Any]:
        out = dict(defaults[scope])
        for d in elem.findall(f"{ns}data"):
            kid = d.get("key", "")
            if kid not in keys:
                raise _err(f"{where}: data refers to undeclared key {kid!r}", _GRAPHML_FIX)
            _, attr, typ = keys[kid]
            try:
                out[attr] = _graphml_value(d.text, typ)
            except ValueError as exc:
                raise _err(f"{where}: value {d.text!r} of {attr!r} is not a {typ}", _GRAPHML_FIX) from exc
        return out

    gdata = data_of(graph, "graph")
    nodes: list[tuple[str, str, dict[str, Any]]] = []
    for node in graph.findall(f"{ns}node"):
        nid = node.get("id")
        if nid is None:
            raise _err(f"{where}: a <node> has no id", _GRAPHML_FIX)
        attrs = data_of(node, "node")
        kind = str(attrs.get("kind", SWITCH)).lower()
        rec: dict[str, Any] = {}
        if kind == SWITCH:
            rec["dpid"] = _graphml_int(attrs.get("dpid"), f"dpid of {nid}")
        elif kind == HOST:
            for f in ("mac", "ip"):
                v = attrs.get(f)
                rec[f] = None if v == "" else v
        nodes.append((nid, kind, rec))
    links: list[tuple[str, int | None, str, int | None]] = []
    for edge in graph.findall(f"{ns}edge"):
        src, dst = edge.get("source"), edge.get("target")
        if src is None or dst is None:
            raise _err(f"{where}: an <edge> lacks source or target", _GRAPHML_FIX)
        attrs = data_of(edge, "edge")
        p1 = _graphml_int(attrs.get("port1"), "port1")
        p2 = _graphml_int(attrs.get("port2"), "port2")
        if attrs.get("node1") == dst and attrs.get("node2") == src:
            src, dst = dst, src  # networkx may write an undirected edge the other way round
        links.append((src, p1, dst, p2))
    name = str(gdata.get("name") or "file")
    spec = str(gdata.get("spec") or name)
    return build_from_records(name, spec, nodes, links)


# --------------------------------------------------------------------------- reading files


def load_topology_file(path: str | Path, spec: str | None = None) -> Topology:
    """Read a ``.json`` (:meth:`Topology.to_json` format) or ``.graphml`` topology file.

    The result's ``spec`` is ``spec`` if given (what the user typed), else
    ``file:PATH``, so the topology records where it came from.
    """
    path = Path(path)
    where = f"topology file {str(path)!r}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise _err(f"{where} does not exist", f"check the path, or use one of: {KNOWN_FORMS}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise _err(f"{where} cannot be read: {exc}", "give a readable UTF-8 .json or .graphml file") from exc
    suffix = path.suffix.lower()
    is_graphml = suffix == ".graphml" or (suffix != ".json" and text.lstrip().startswith("<"))
    try:
        if is_graphml:
            topo = topology_from_graphml(text, where)
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _err(f"{where} is not valid JSON: {exc}", JSON_FIX) from exc
            topo = Topology.from_json(data)
    except UnknownTopologyError as exc:
        if exc.problem.startswith(where):
            raise
        raise UnknownTopologyError(f"{where}: {exc.problem}", exc.fix) from exc
    topo.set_spec(spec if spec is not None else f"file:{path}")
    return topo
