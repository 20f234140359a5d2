"""`netsleuth cex-inputs`: a model-checking counterexample as a trace of inputs for a real run.

Thin: the logic is in cex_inputs.py.  ``netsleuth replay`` of the written
trace then runs those inputs against the real controller process (for an
``osken:`` counterexample, the same unmodified os-ken app the checker hosted; for a
``pox:`` one, the same POX components from the checkout ``--pox`` names).
"""

from __future__ import annotations

import argparse
import json

from netsleuth.console import out
from netsleuth.options import out_file, seconds


def cmd_cex_inputs(args: argparse.Namespace) -> int:
    from netsleuth.controllers.spec import check_trace_spec
    from netsleuth.nice.cex_inputs import convert_counterexample
    from netsleuth.trace.io import read_header

    # the app the counterexample names is started (os-ken imports it): module names only
    header = read_header(args.counterexample)
    nice = header.extra.get("nice")
    for spec in (header.controller, nice.get("app") if isinstance(nice, dict) else None):
        if isinstance(spec, str):
            check_trace_spec(spec, args.counterexample)
    d = convert_counterexample(args.counterexample, args.out, gap=args.gap)
    if args.json:
        print(json.dumps(d, sort_keys=True))
    else:
        t = d["target"]
        out.print(f"{d['transitions']} transitions -> {d['inputs']} inputs ({', '.join(d['kinds'])}); "
                  f"target {t['invariant']} {'/'.join(t['hosts'])} at {','.join(t['switches'])}; "
                  f"wrote {d['out']} -- reproduce with: netsleuth replay {d['out']} --out DIR",
                  highlight=False, markup=False, soft_wrap=True)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("cex-inputs", help="turn a `check` counterexample into inputs `replay` runs against the "
                                          "real controller")
    c.add_argument("counterexample", help="a counterexample file (cex-N-PROPERTY.jsonl) that "
                                                         "`netsleuth check --out` wrote")
    c.add_argument("--out", required=True, type=out_file(), help="where to write the trace of inputs (.jsonl)")
    c.add_argument("--gap", type=seconds(), default=0.3, help="seconds between inputs (default 0.3)")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument("--pox", metavar="DIR", help="the POX checkout of a pox: counterexample ($NETSLEUTH_POX)")
    c.set_defaults(func=cmd_cex_inputs)
