"""A ratchet on size and complexity: no module of ``netsleuth/`` over 600 lines, no function over complexity 15.

A long module or a long function is read, reviewed and tested as one piece,
so it grows by accretion: every fix lands beside the code it fixes. The check
holds the line. Modules are measured in lines of text; functions by their
McCabe complexity as ruff's ``C901`` computes it (run here with ``--isolated``
so that no configuration, per-file ignore or ``noqa`` can hide one), over
everything ``make lint`` checks (``netsleuth tests bench examples``).

The exceptions are the two lists below, each entry with the reason it stands
and, where it is due, the split that will end it. The lists may only shrink:
an entry whose module is now short enough, or whose function is now simple
enough, fails the check until it is removed, so a split cannot leave its
exception behind. ``pyproject.toml`` lets ruff's own ``C901`` pass on exactly
the files named by :data:`COMPLEX_FUNCTIONS` (a test holds the two together).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "netsleuth"
LINTED = ("netsleuth", "tests", "bench", "examples")
MAX_LINES = 600
MAX_COMPLEXITY = 15

# Modules allowed over MAX_LINES, by path from the repository root, each with why and what the split is.
LONG_MODULES: dict[str, str] = {}

# Functions allowed over MAX_COMPLEXITY, as "path:function" (ruff's name for it), each with why.
COMPLEX_FUNCTIONS: dict[str, str] = {
    "bench/invariants.py:main":
        "the benchmark's phases run one after the other from one argument set; to split per phase",
    "bench/nice_table1.py:main":
        "the table's rows (plain, ablation, dpor, before/after) in one loop; to split per row kind",
    "netsleuth/campaign/spec.py:load_campaign_file":
        "one branch per campaign-file key with its own error line; to split into a per-key reader table",
    "netsleuth/jobs/replay.py:replay_once":
        "one replay: the controller, the plan, feeding each input when its events are in, the checks after; "
        "to split the feeding loop out",
    "netsleuth/minimize/atoms.py:__init__":
        "indexes the inputs, builds each host's migration chain and a union-find over deps in one constructor; "
        "to split one helper per structure",
    "netsleuth/minimize/synthetic.py:synthetic_inputs":
        "both scenarios' input generators in one function; to split per scenario",
    "netsleuth/minimize/synthetic.py:apply":
        "one branch per synthetic input kind; to split into a per-kind table",
    "netsleuth/model/of13/fields.py:oxm_fields":
        "split pending (model/ is being changed): one branch per header layer; per-layer helpers",
    "netsleuth/model/of13/instructions.py:check_actions":
        "split pending (model/ is being changed): one branch per action type; a per-type check table",
    "netsleuth/model/of13/switch.py:_on_multipart":
        "split pending (model/ is being changed): one branch per multipart type; a per-type handler table",
    "netsleuth/model/topo_builders.py:parse_topo":
        "split pending (model/ is being changed): one branch per topology form; a per-form parser table",
    "netsleuth/model/topology_io.py:topology_from_graphml":
        "split pending (model/ is being changed): keys, nodes and edges read with their error lines; "
        "one helper each",
    "netsleuth/openflow/of13/decode.py:_decode_multipart_reply":
        "split pending (openflow/ is being changed): one branch per multipart type; a per-type decoder table",
    "netsleuth/oracles/of13.py:parse_flow13":
        "one branch per field group of Open vSwitch's Flow: line (VLANs, MPLS, L3, L4); to split per group",
    "netsleuth/rootcause/reduce.py:reduce_trace":
        "cuts the trace at the violation, then keeps the flow_mods behind every live entry and every removal; "
        "to split per kind of kept flow_mod",
    "netsleuth/rootcause/trace_packet.py:trace_packet":
        "one walk of the recorded run that finds the injected packet, its attachment, its hops and loops; "
        "to split finding the packet from following it",
    "netsleuth/rootcause/viz.py:_layout_panel":
        "one panel: lanes, where each host is plugged in through migrations, one arrow per event column; "
        "to split the arrow of one event out",
    "netsleuth/schedulers/fuzz.py:plan_round":
        "one coin per possible input of each kind (failures, recoveries, migrations, traffic, delays); "
        "to split into a per-kind table",
    "netsleuth/trace/validate.py:_of":
        "every check of one recorded OpenFlow message (version, type, xid, keys, cached shapes, rebuild and "
        "encode); to split the body check out",
    "tests/test_headerspace.py:packet_from_fields":
        "a test helper building a packet layer by layer from a field dict",
    "tests/test_headerspace13.py:oxm_matches":
        "a test's Hypothesis strategy: one branch per OXM field prerequisite",
    "tests/test_headerspace13.py:networks":
        "a test's Hypothesis strategy drawing switches, tables and entries",
    "tests/test_ovs_differential.py:random_wildcard_match":
        "a test's random match: one branch per OpenFlow 1.0 field",
    "tests/test_ovs_differential13.py:header_actions":
        "a test's random action macro: one branch per header action kind",
}


def long_modules(pkg: Path) -> dict[str, int]:
    """Every module under ``pkg`` over :data:`MAX_LINES`, by path from the package's parent, with its line count."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        n = len(path.read_text().splitlines())
        if n > MAX_LINES:
            out[path.relative_to(pkg.parent).as_posix()] = n
    return out


def complex_functions(root: Path, paths: tuple[str, ...]) -> dict[str, str]:
    """Every function over :data:`MAX_COMPLEXITY` in ``paths`` (under ``root``): ``"path:name"`` -> ruff's message.

    ``--isolated`` drops the configuration, per-file ignores and ``noqa`` with it; the
    project's excluded paths (data that is not code) are passed again by hand.
    """
    pyproject = root / "pyproject.toml"
    config = tomllib.loads(pyproject.read_text()) if pyproject.exists() else {}
    excluded = config.get("tool", {}).get("ruff", {}).get("extend-exclude", [])
    cmd = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "C901",
           "--config", f"lint.mccabe.max-complexity={MAX_COMPLEXITY}", "--output-format", "json",
           "--exit-zero", *(f"--extend-exclude={x}" for x in excluded), *paths]
    res = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True)
    out = {}
    for d in json.loads(res.stdout):
        if d["code"] != "C901":
            raise AssertionError(f'ruff could not read {d["filename"]}: {d["message"]}')
        rel = Path(d["filename"]).resolve().relative_to(root.resolve()).as_posix()
        name = d["message"].split("`")[1]
        out[f"{rel}:{name}"] = f'{rel}:{d["location"]["row"]}: {d["message"]}'
    return out


def test_no_module_over_the_line_limit_unless_listed() -> None:
    over = {p: n for p, n in long_modules(PACKAGE).items() if p not in LONG_MODULES}
    assert not over, f"modules over {MAX_LINES} lines (split them along their concepts):\n" + "\n".join(
        f"  {p}: {n} lines" for p, n in over.items())


def test_listed_long_modules_are_still_long() -> None:
    long = long_modules(PACKAGE)
    stale = [p for p in LONG_MODULES if p not in long]
    assert not stale, f"no longer over {MAX_LINES} lines (or gone): remove from LONG_MODULES: {stale}"


def test_no_function_over_the_complexity_limit_unless_listed() -> None:
    found = complex_functions(ROOT, LINTED)
    new = [msg for key, msg in found.items() if key not in COMPLEX_FUNCTIONS]
    assert not new, f"functions over complexity {MAX_COMPLEXITY} (split them):\n" + "\n".join(f"  {m}" for m in new)
    stale = [key for key in COMPLEX_FUNCTIONS if key not in found]
    assert not stale, f"no longer over complexity {MAX_COMPLEXITY} (or gone): remove from COMPLEX_FUNCTIONS: " \
                      f"{stale}"


def test_ruff_is_let_off_only_where_the_list_says() -> None:
    """pyproject's per-file C901 ignores name exactly the files of COMPLEX_FUNCTIONS, at the same limit."""
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert lint["mccabe"]["max-complexity"] == MAX_COMPLEXITY
    ignored = {p for p, codes in lint.get("per-file-ignores", {}).items() if "C901" in codes}
    listed = {key.rpartition(":")[0] for key in COMPLEX_FUNCTIONS}
    assert ignored == listed, (f"per-file C901 ignores without a COMPLEX_FUNCTIONS entry: {sorted(ignored - listed)}; "
                               f"COMPLEX_FUNCTIONS files ruff is not let off on: {sorted(listed - ignored)}")


def test_the_checks_find_a_long_module_and_a_complex_function(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "short.py").write_text("x = 1\n" * MAX_LINES)
    (pkg / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert long_modules(pkg) == {"pkg/long.py": MAX_LINES + 1}
    # if-chains of MAX_COMPLEXITY - 1 branches: complexity MAX_COMPLEXITY, one more branch is over it.
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(MAX_COMPLEXITY - 1))
    (pkg / "short.py").write_text(f"def simple(x):\n{branches}    return -1\n")
    (pkg / "long.py").write_text(f"def tangled(x):\n    if x:\n        pass\n{branches}    return -1\n")
    assert list(complex_functions(tmp_path, ("pkg",))) == ["pkg/long.py:tangled"]
