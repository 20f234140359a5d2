"""`netsleuth faucet-config`: print the Faucet config that ``faucet:auto`` would run.

A user who wants more than one flat VLAN (ACLs, several VLANs, routing)
starts from this file, edits it and passes it back with
``--controller faucet:FILE.yaml``. Argument parsing and output only; the
config itself comes from netsleuth.controllers.faucet.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from netsleuth.console import err


def cmd_faucet_config(args: argparse.Namespace) -> int:
    from netsleuth.controllers.faucet import render_config
    from netsleuth.model.topo_builders import parse_topo

    text = render_config(parse_topo(args.topo))
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        err.print(f"wrote {path}: run it with --controller faucet:{path}", markup=False, highlight=False,
                  soft_wrap=True)
    else:
        sys.stdout.write(text)
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("faucet-config", help="print the Faucet config faucet:auto generates for a topology "
                                             "(edit it and pass it back with --controller faucet:FILE)")
    p.add_argument("--topo", required=True, help="topology, e.g. linear,3 | tree,depth=2,fanout=2 | ring,4 | mesh,4")
    p.add_argument("--out", help="write the YAML to this file instead of standard output")
    p.set_defaults(func=cmd_faucet_config)
