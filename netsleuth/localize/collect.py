"""The coverage a replay leaves on disk, and the spectrum read back from many replays.

Each measured controller process writes its lines as JSON when it stops
(controllers/covlaunch.py), one file per process start under the replay's
``coverage/``.  :func:`write_replay_coverage` merges them into the replay's
``coverage.json`` together with its verdict (reproduced or not), and
:func:`load_runs` turns a set of those files into the runs of a spectrum,
keeping only the controller's own code unless ``all_code``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.localize.spectrum import Line, Run

COVERAGE_FILE = "coverage.json"


def merge_process_files(folder: Path) -> dict[str, Any]:
    """The union of the lines every process start under ``folder`` wrote, and what was lost."""
    lines: dict[str, set[int]] = {}
    own: set[str] = set()
    framework: set[str] = set()
    processes = lost = 0
    for marker in sorted(Path(folder).glob("*.json.run")):
        if not marker.with_suffix("").exists():
            lost += 1  # switched to counting, but never wrote its lines: killed (an injected crash)
    for f in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            lost += 1
            continue
        processes += 1
        own.update(data.get("own", []))
        framework.update(data.get("framework", []))
        for name, nums in data.get("lines", {}).items():
            lines.setdefault(name, set()).update(nums)
    return {"processes": processes, "lost": lost, "own": sorted(own), "framework": sorted(framework),
            "lines": {name: sorted(nums) for name, nums in sorted(lines.items())}}


def write_replay_coverage(replay_dir: Path, reproduced: bool | None, inputs: int) -> Path | None:
    """Merge the replay's per-process files into ``replay_dir/coverage.json`` with its verdict."""
    folder = Path(replay_dir) / "coverage"
    if not folder.is_dir():
        return None
    merged = merge_process_files(folder)
    if not merged["processes"]:
        return None
    record = {"reproduced": reproduced, "inputs": inputs, **merged}
    path = Path(replay_dir) / COVERAGE_FILE
    path.write_text(json.dumps(record, sort_keys=True) + "\n")
    return path


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@dataclass
class Spectrum:
    """Runs read from replays' coverage files, with where they came from."""

    runs: list[Run] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)   # the coverage.json of each run, in order
    own: list[str] = field(default_factory=list)
    framework: list[str] = field(default_factory=list)
    lost_processes: int = 0
    skipped: int = 0  # replays without a verdict


def load_runs(paths: list[Path], *, all_code: bool = False) -> Spectrum:
    """Runs from ``coverage.json`` files: the controller's own code only, or all measured code."""
    records = []
    spectrum = Spectrum()
    for p in paths:
        data = json.loads(Path(p).read_text())
        if data.get("reproduced") is None:
            spectrum.skipped += 1
            continue
        records.append((str(p), data))
        spectrum.own = sorted(set(spectrum.own) | set(data.get("own", [])))
        spectrum.framework = sorted(set(spectrum.framework) | set(data.get("framework", [])))
        spectrum.lost_processes += int(data.get("lost", 0))
    for source, data in records:
        keep: set[Line] = set()
        for name, nums in data.get("lines", {}).items():
            if all_code or _under(name, spectrum.own):
                keep.update((name, n) for n in nums)
        spectrum.runs.append(Run(bool(data["reproduced"]), frozenset(keep)))
        spectrum.sources.append(source)
    return spectrum


__all__ = ["COVERAGE_FILE", "Spectrum", "load_runs", "merge_process_files", "write_replay_coverage"]
