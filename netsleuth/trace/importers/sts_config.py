"""What an STS experiment's config files say: its topology, invariant check and controllers.

An STS experiment folder (``experiments/<name>/``) holds, beside its
``events.trace`` or ``mcs.trace``, the Python config files STS ran it with:
``orig_config.py`` (the fuzzing run), ``mcs_config.py`` and
``replay_config.py`` (and ``interactive_replay_config.py``,
``openflow_replay_config.py``). They name the topology
(``topology_class=MeshTopology, topology_params="num_switches=3"``), the
invariant check (``invariant_check_name='InvariantChecker.check_loops'``, or
``invariant_check=my_function`` for one defined in the file) and the
controllers (``ControllerConfig(..., label='c1')``).

These files are programs (some read environment variables, start VMs or
raise on purpose), so they are *parsed* with :mod:`ast`, never run. Many are
Python 2 (``print "..."``): a line Python 3 cannot parse is blanked and the
parse retried, and the report says which lines were left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CONFIG_FILES", "StsConfig", "read_sts_config", "sts_topology_spec"]

CONFIG_FILES = ("orig_config.py", "mcs_config.py", "replay_config.py", "interactive_replay_config.py",
                "openflow_replay_config.py")
"""The config files STS writes into an experiment folder, in the order they are trusted."""

_MAX_BLANKED = 20  # Python 2 lines blanked per file before giving up on it

# STS topology classes -> (netsleuth form, the parameter it takes, STS's default for it)
_TOPOLOGY_FORMS = {"MeshTopology": ("sts-mesh", "num_switches", 3), "FatTree": ("sts-fattree", "num_pods", 4)}
# Parameters that change nothing netsleuth models, at STS's defaults
_HARMLESS = {"gui": False, "netns_hosts": False, "create_io_worker": None, "use_portland_addressing": True}


@dataclass
class StsConfig:
    """The settings found in an experiment's config files (None: not found) and where."""

    topology_class: str | None = None
    topology_params: str | None = None
    invariant_check: str | None = None       # invariant_check_name, or the name of a function in the file
    invariant_check_custom: bool = False     # given as invariant_check=<function>, not by STS's name
    controllers: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"files": list(self.files), "topology_class": self.topology_class,
                "topology_params": self.topology_params, "invariant_check": self.invariant_check,
                "invariant_check_custom": self.invariant_check_custom, "controllers": list(self.controllers)}


def _parse(path: Path, notes: list[str]) -> ast.Module | None:
    """The file's syntax tree; Python-2-only lines are blanked (and noted) until it parses."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        notes.append(f"{path.name}: cannot read ({exc.strerror or exc}); ignored")
        return None
    blanked: list[int] = []
    while True:
        try:
            return _note_blanked(ast.parse("\n".join(lines), filename=str(path)), path, blanked, notes)
        except SyntaxError as exc:
            n = exc.lineno
            if n is None or not 1 <= n <= len(lines) or not lines[n - 1].strip() or len(blanked) >= _MAX_BLANKED:
                notes.append(f"{path.name}: not parseable as Python ({exc.msg}, line {n}); ignored")
                return None
            lines[n - 1] = ""
            blanked.append(n)


def _note_blanked(tree: ast.Module, path: Path, blanked: list[int], notes: list[str]) -> ast.Module:
    if blanked:
        notes.append(f"{path.name}: left out Python 2 line(s) {', '.join(map(str, sorted(blanked)))} to parse it")
    return tree


def _names(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``name = value`` assignments (the last one wins, as when the file runs)."""
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value
    return out


def _resolve(value: ast.expr, names: dict[str, ast.expr], depth: int = 0) -> ast.expr:
    """Follow ``x = y`` chains of module-level names (bounded: a config may say ``a = a``)."""
    while isinstance(value, ast.Name) and value.id in names and depth < 10:
        nxt = names[value.id]
        if nxt is value:
            break
        value, depth = nxt, depth + 1
    return value


def _text(value: ast.expr) -> str | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute):
        return value.attr
    return None


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _read_one(path: Path, cfg: StsConfig) -> None:
    tree = _parse(path, cfg.notes)
    if tree is None:
        return
    cfg.files.append(path.name)
    names = _names(tree)
    found: dict[str, ast.expr] = {}
    labels: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        kw = {k.arg: _resolve(k.value, names) for k in node.keywords if k.arg}
        if _call_name(node) == "ControllerConfig":
            label = _text(kw["label"]) if "label" in kw else None
            labels.append(label if label else f"c{len(labels) + 1}")  # STS numbers unlabelled ones c1, c2, ...
        for key in ("topology_class", "topology_params", "invariant_check_name", "invariant_check"):
            if key in kw and key not in found:
                found[key] = kw[key]
    for key in ("topology_class", "topology_params"):  # a file may only assign them
        if key not in found and key in names:
            found[key] = _resolve(names[key], names)
    if cfg.topology_class is None and "topology_class" in found:
        cfg.topology_class = _text(found["topology_class"])
    if cfg.topology_params is None and "topology_params" in found:
        cfg.topology_params = _text(found["topology_params"])
    if cfg.invariant_check is None:
        if "invariant_check_name" in found and _text(found["invariant_check_name"]):
            cfg.invariant_check = _text(found["invariant_check_name"])
        elif "invariant_check" in found and _text(found["invariant_check"]):
            cfg.invariant_check = _text(found["invariant_check"])
            cfg.invariant_check_custom = True
    if not cfg.controllers and labels:
        cfg.controllers = labels


def read_sts_config(folder: str | Path) -> StsConfig:
    """Parse the config files present in ``folder`` (none present: an empty :class:`StsConfig`)."""
    cfg = StsConfig()
    d = Path(folder)
    for name in CONFIG_FILES:
        p = d / name
        if p.is_file():
            _read_one(p, cfg)
    return cfg


def sts_topology_spec(cfg: StsConfig) -> tuple[str | None, list[str]]:
    """The ``--topo`` spec for the config's topology (None if netsleuth has no builder for it) and notes."""
    if cfg.topology_class is None:
        return None, []
    form = _TOPOLOGY_FORMS.get(cfg.topology_class)
    if form is None:
        return None, [f"the config's topology_class {cfg.topology_class} has no netsleuth builder "
                      f"(known: {', '.join(_TOPOLOGY_FORMS)}); pass --topo"]
    name, param, default = form
    value: Any = default
    notes: list[str] = []
    text = (cfg.topology_params or "").strip()
    if text:
        try:
            call = ast.parse(f"f({text})", mode="eval").body
            assert isinstance(call, ast.Call)
            given = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except (SyntaxError, ValueError, AssertionError):
            return None, [f"the config's topology_params {text!r} are not keyword=literal pairs; pass --topo"]
        for key, v in given.items():
            if key == param:
                value = v
            elif key not in _HARMLESS or _HARMLESS[key] != v:
                notes.append(f"topology parameter {key}={v!r} is not modelled (STS's default numbering is used)")
    if type(value) is not int:
        return None, [f"the config's {param}={value!r} is not an integer; pass --topo"]
    return f"{name},{value}", notes
