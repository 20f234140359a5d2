"""A learning switch (os-ken, OpenFlow 1.0) that follows hosts when they move.

When a switch reports a port deleted (a host left it), every MAC address
learned on that port is forgotten on every switch and the flows towards it
are deleted, so traffic floods until the host is learned again where it now
is.  netsleuth's localization tests seed one-line faults into this file.
"""

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.mac import haddr_to_bin
from os_ken.lib.packet import ether_types, ethernet, packet
from os_ken.ofproto import ofproto_v1_0


class MovingSwitch(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.where = {}       # dpid -> {mac: port}
        self.datapaths = {}   # dpid -> datapath

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        eth = packet.Packet(msg.data).get_protocol(ethernet.ethernet)
        if eth is None or eth.ethertype == ether_types.ETH_TYPE_LLDP:
            return
        self.datapaths[dp.id] = dp
        table = self.where.setdefault(dp.id, {})
        table[eth.src] = msg.in_port
        out_port = table.get(eth.dst, ofp.OFPP_FLOOD)
        actions = [parser.OFPActionOutput(out_port)]
        if out_port != ofp.OFPP_FLOOD:
            match = parser.OFPMatch(in_port=msg.in_port, dl_dst=haddr_to_bin(eth.dst),
                                    dl_src=haddr_to_bin(eth.src))
            dp.send_msg(parser.OFPFlowMod(datapath=dp, match=match, cookie=0, command=ofp.OFPFC_ADD,
                                          priority=ofp.OFP_DEFAULT_PRIORITY, actions=actions))
        data = msg.data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id, in_port=msg.in_port,
                                        actions=actions, data=data))

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def port_status(self, ev):
        msg = ev.msg
        ofp = msg.datapath.ofproto
        if msg.reason != ofp.OFPPR_DELETE:
            return
        table = self.where.setdefault(msg.datapath.id, {})
        gone = [mac for mac, port in table.items() if port == msg.desc.port_no]
        for mac in gone:
            self.forget(mac)

    def forget(self, mac):
        """Forget ``mac`` on every switch and delete the flows that send to it."""
        for dpid, dp in sorted(self.datapaths.items()):
            self.where.get(dpid, {}).pop(mac, None)
            parser = dp.ofproto_parser
            dp.send_msg(parser.OFPFlowMod(datapath=dp, match=parser.OFPMatch(dl_dst=haddr_to_bin(mac)), cookie=0,
                                          command=dp.ofproto.OFPFC_DELETE, actions=[]))
