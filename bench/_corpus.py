"""The SDNRacer trace corpus the race and clustering benchmarks run over, read from beside the checkout.

It holds ``traces/*.hb.json`` (happens-before traces recorded with SDNRacer on
POX, Floodlight and ONOS applications) and ``reference.json`` (the race and
cluster counts SDNRacer and BigBug report for them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdnracer"


def load_corpus(corpus: Path) -> tuple[list[Path], dict]:
    """The corpus's traces (sorted) and its reference numbers; exits 2 with a fix when there are none."""
    traces = sorted((corpus / "traces").glob("*.hb.json"))
    if not traces:
        print(f"error: no *.hb.json under {corpus / 'traces'} -- fix: pass --corpus DIR", file=sys.stderr)
        raise SystemExit(2)
    ref_path = corpus / "reference.json"
    return traces, (json.loads(ref_path.read_text()) if ref_path.exists() else {})
