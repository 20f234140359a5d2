"""A Ryu app (Ryu's API, run unmodified) that uses what Ryu apps commonly lean on besides packets.

* its own option, set by an app config file (``--config-file``): the
  priority of the flood rule;
* a file read from the app's own folder (``banner.txt``);
* ``ryu.controller.dpset`` as a context, to learn when switches join;
* ``ryu.lib.ofctl_v1_0`` (the REST API's helpers) to install the rule;
* a ``hub.spawn`` thread that reports how many switches it has seen.

What it does is trivial on purpose -- one flood rule per switch, a hub --
so that a loop-free topology pings clean and the test can see each part did
its job: the rule's priority in the trace, the banner and the thread's
report in the controller's log.
"""

import os

from ryu import cfg
from ryu.base import app_manager
from ryu.controller import dpset
from ryu.controller.handler import set_ev_cls
from ryu.lib import hub, ofctl_v1_0
from ryu.ofproto import ofproto_v1_0

CONF = cfg.CONF
CONF.register_opts([cfg.IntOpt("priority", default=1, help="priority of the flood rule")], group="flood_hub")

HERE = os.path.dirname(os.path.abspath(__file__))


class FloodHub(app_manager.RyuApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]
    _CONTEXTS = {"dpset": dpset.DPSet}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.dpset = kwargs["dpset"]
        with open(os.path.join(HERE, "banner.txt")) as f:
            self.banner = f.read().strip()
        self.logger.info("flood_hub banner: %s", self.banner)
        self.joined = set()
        self.reporter = hub.spawn(self._report)

    def _report(self):
        reported = -1
        while True:
            if len(self.joined) != reported:
                reported = len(self.joined)
                self.logger.info("flood_hub thread: %d switches joined", reported)
            hub.sleep(0.1)

    @set_ev_cls(dpset.EventDP, dpset.DPSET_EV_DISPATCHER)
    def _dp_event(self, ev):
        if not ev.enter:
            return
        self.joined.add(ev.dp.id)
        flow = {"priority": CONF.flood_hub.priority, "actions": [{"type": "OUTPUT", "port": "FLOOD"}]}
        ofctl_v1_0.mod_flow_entry(ev.dp, flow, ev.dp.ofproto.OFPFC_ADD)
