"""A Ryu app (written against Ryu's API, run unmodified) that routes on shortest paths.

It learns the switches and links from ``ryu.topology`` -- so it needs
``--observe-links``: the LLDP frames the topology app sends out of every
port must cross the links and come back as packet-ins -- and installs, for
each destination host, the tree of shortest paths towards it (one next hop
per switch, so paths never disagree).  Broadcasts (ARP) never travel between
switches: the controller hands them to every host port itself, which keeps a
ring loop-free without a spanning tree.  Host locations are learned on host
ports only, the first time a source is seen.  A packet that reaches the next
switch before that switch's rule does comes back as a packet-in on a link
port, and is routed on from there.
"""

from path_utils import next_hops  # a helper module beside the app
from ryu.base import app_manager
from ryu.controller import ofp_event
from ryu.controller.handler import MAIN_DISPATCHER, set_ev_cls
from ryu.lib.mac import haddr_to_bin
from ryu.lib.packet import ether_types, ethernet, packet
from ryu.ofproto import ofproto_v1_0
from ryu.topology import event as topo_event
from ryu.topology.api import get_link, get_switch


class ShortestPath(app_manager.RyuApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.links = {}        # (src dpid, src port) -> (dst dpid, dst port)
        self.hosts = {}        # mac -> (dpid, port)
        self.datapaths = {}    # dpid -> datapath
        self.ports = {}        # dpid -> port numbers

    # ---------------------------------------------------------------- topology
    @set_ev_cls([topo_event.EventSwitchEnter, topo_event.EventLinkAdd, topo_event.EventLinkDelete])
    def _topology_changed(self, ev):
        self.datapaths = {}
        self.ports = {}
        for sw in get_switch(self, None):
            self.datapaths[sw.dp.id] = sw.dp
            self.ports[sw.dp.id] = sorted(p.port_no for p in sw.ports)
        self.links = {}
        for link in get_link(self, None):
            self.links[(link.src.dpid, link.src.port_no)] = (link.dst.dpid, link.dst.port_no)
        # a host seen on what turned out to be a link was a copy, not the host
        for mac, where in list(self.hosts.items()):
            if where in self.links:
                del self.hosts[mac]
        self.logger.info("topology: %d switches, %d links: %s", len(self.datapaths), len(self.links),
                         " ".join("{}:{}-{}:{}".format(*a, *b) for a, b in sorted(self.links.items())))

    # ---------------------------------------------------------------- packets
    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def _packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        eth = packet.Packet(msg.data).get_protocol(ethernet.ethernet)
        if eth is None or eth.ethertype == ether_types.ETH_TYPE_LLDP:
            return  # LLDP is the topology app's
        where = (dp.id, msg.in_port)
        on_link = where in self.links
        if not on_link:
            self.hosts.setdefault(eth.src, where)
        dst = self.hosts.get(eth.dst)
        if dst is None:
            if not on_link:  # a broadcast crossing a link was handed to every host port already
                self._to_every_host_port(msg.data, where)
            return
        # A packet on a link is one that overtook its own path's rule (each switch has its own
        # connection, so the rules arrive in no fixed order): it is routed like any other.
        hops = next_hops(dst[0], self.links)
        if dp.id != dst[0] and dp.id not in hops:
            self._to_every_host_port(msg.data, where)  # no path known yet
            return
        dpid = dp.id
        while True:  # the path from here to the destination, one flow per switch
            out_port = dst[1] if dpid == dst[0] else hops[dpid][0]
            self._install(self.datapaths.get(dpid, dp), eth.dst, out_port)
            if dpid == dst[0]:
                break
            dpid = hops[dpid][1]
        out_port = dst[1] if dp.id == dst[0] else hops[dp.id][0]
        self._packet_out(dp, out_port, msg.data)

    def _host_ports(self, dpid):
        return [p for p in self.ports.get(dpid, []) if (dpid, p) not in self.links and p < ofproto_v1_0.OFPP_MAX]

    def _to_every_host_port(self, data, came_from):
        for dpid in sorted(self.datapaths):
            for port in self._host_ports(dpid):
                if (dpid, port) != came_from:
                    self._packet_out(self.datapaths[dpid], port, data)

    def _install(self, dp, mac, out_port):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        match = parser.OFPMatch(dl_dst=haddr_to_bin(mac))
        dp.send_msg(parser.OFPFlowMod(datapath=dp, match=match, cookie=0, command=ofp.OFPFC_ADD,
                                      idle_timeout=0, hard_timeout=0, priority=100,
                                      actions=[parser.OFPActionOutput(out_port)]))

    def _packet_out(self, dp, port, data):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=ofp.OFPP_NONE,
                                        actions=[parser.OFPActionOutput(port)], data=data))
