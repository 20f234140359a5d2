"""What a campaign runs: the campaign file (TOML), the flags over it, and the list of jobs it makes.

A campaign is the cross product of controllers, topologies, rate sets and
seeds, each cell one fuzz job.  Jobs are listed seed-major (every
configuration with seed 1, then with seed 2, ...) so that a budget that
stops early still covers every configuration evenly, and the list depends
only on the campaign's definition: a restarted campaign gets the same jobs
under the same ids, which is what lets it skip the ones already done.

A campaign file::

    controllers = ["osken:os_ken.app.simple_switch"]
    topologies = ["linear,3", "ring,4"]
    seeds = "1-100"          # or [1, 5, 9], or {start = 1, count = 100}
    steps = 100
    checks = "loops,blackholes,dataplane-loops"

    [rates.migrations]       # one rate set: fuzz's per-round probabilities over its defaults
    host_migration = 0.05
    traffic = 0.3

    [budget]
    runs = 200               # at most this many jobs
    seconds = 3600           # no job starts after this long

Every field is also a flag of ``netsleuth campaign``; a flag replaces the
file's value.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.invariants import registry
from netsleuth.live.ready import Warmup, WarmupError
from netsleuth.model.topo_builders import parse_topo
from netsleuth.schedulers.fuzz import Rates

CAMPAIGN_FIX = "see the example campaign file in docs/guide/campaigns.md"


class CampaignSpecError(NetsleuthError):
    """The campaign file or a campaign flag cannot be used."""


@dataclass(frozen=True)
class JobSpec:
    """One fuzz run of the campaign: a configuration and a seed."""

    index: int
    controller: str
    topo: str
    rates_name: str
    rates: dict[str, float]
    seed: int

    @property
    def key(self) -> str:
        """Stable across restarts: what the job is, not where it stands in the list."""
        text = json.dumps([self.controller, self.topo, self.rates_name, self.rates, self.seed], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def dirname(self) -> str:
        return f"j{self.index:05d}-{self.key}"

    def label(self) -> str:
        return f"{self.controller} {self.topo} rates={self.rates_name} seed={self.seed}"


@dataclass
class CampaignSpec:
    """A campaign's definition (what is run) and its running options (how)."""

    controllers: list[str] = field(default_factory=list)
    topologies: list[str] = field(default_factory=list)
    rate_sets: dict[str, dict[str, float]] = field(default_factory=lambda: {"default": {}})
    seeds: list[int] = field(default_factory=lambda: list(range(1, 11)))
    steps: int = 100
    checks: str | None = None
    persist: int = 3
    round_seconds: float = 0.1
    # the switches (as fuzz's --buffer-packets, --table-size) and the warm-up (fuzz's --warmup)
    buffer_packets: int = 0
    table_size: int = 0
    warmup: str = "0"
    # how it runs (may change between a campaign's restarts)
    budget_runs: int | None = None
    budget_seconds: float | None = None
    job_timeout: float = 300.0
    executor: str = "local"
    jobs: int | None = None
    address: str | None = None
    minimize: bool = True
    minimize_budget: float = 300.0
    localize: bool = True   # rank each minimized bucket's controller lines (campaign/localized.py)
    # fuzz --check-every-flowmod: names the message behind each violation; finds the same ones
    check_every_flowmod: bool = False

    def definition(self) -> dict[str, Any]:
        """The part a restart must not change: it decides which jobs exist and what they find."""
        d = asdict(self)
        out = {k: d[k] for k in ("controllers", "topologies", "rate_sets", "seeds", "steps", "checks",
                                 "persist", "round_seconds")}
        # only when set, so a campaign started before these existed resumes with its definition unchanged
        out.update({k: d[k] for k in ("buffer_packets", "table_size", "warmup") if d[k] != _DEFAULTS[k]})
        return out

    def rates(self, name: str) -> Rates:
        return Rates(dict(Rates().values, **self.rate_sets[name]))

    def job_list(self) -> list[JobSpec]:
        """Every job, seed-major, cut to ``budget_runs``."""
        out: list[JobSpec] = []
        for seed in self.seeds:
            for controller in self.controllers:
                for topo in self.topologies:
                    for name in self.rate_sets:  # insertion order: the file's order
                        values = dict(sorted(self.rates(name).values.items()))
                        out.append(JobSpec(len(out), controller, topo, name, values, seed))
        return out[: self.budget_runs] if self.budget_runs is not None else out

    def check(self) -> None:
        """Refuse what cannot work before anything starts (one line, exit 2)."""
        if not self.controllers:
            raise CampaignSpecError("the campaign names no controller",
                                    "add controllers = [...] to the campaign file or pass --controller")
        if not self.topologies:
            raise CampaignSpecError("the campaign names no topology",
                                    "add topologies = [...] to the campaign file or pass --topo")
        if not self.seeds:
            raise CampaignSpecError("the campaign's seed range is empty", "pass --seeds 1-20 (first-last)")
        for topo in self.topologies:
            parse_topo(topo)  # UnknownTopologyError, with its own fix
        registry.resolve(self.checks)
        for name in self.rate_sets:
            self.rates(name).with_overrides([f"{k}={v}" for k, v in self.rate_sets[name].items()])
        self._check_numbers()

    def _check_numbers(self) -> None:
        """The counts, durations and budgets (and the warm-up) are in range."""
        for what, value in (("steps", self.steps), ("persist", self.persist)):
            if value < 1:
                raise CampaignSpecError(f"{what} must be at least 1, not {value}", f"set {what} to 1 or more")
        for what, value in (("buffer_packets", self.buffer_packets), ("table_size", self.table_size)):
            if value < 0:
                raise CampaignSpecError(f"{what} must be at least 0, not {value}", f"set {what} to 0 (off) or more")
        try:
            Warmup.parse(self.warmup)
        except WarmupError as exc:
            raise CampaignSpecError(exc.problem, 'write warmup = "auto", "auto:30" or a number of seconds') \
                from None
        for what, num in (("round_seconds", self.round_seconds), ("job_timeout", self.job_timeout),
                          ("minimize_budget", self.minimize_budget)):
            if not num > 0:
                raise CampaignSpecError(f"{what} must be > 0, not {num}", f"set {what} to a positive number")
        if self.budget_runs is not None and self.budget_runs < 1:
            raise CampaignSpecError(f"budget runs must be at least 1, not {self.budget_runs}",
                                    "set [budget] runs to 1 or more")
        if self.budget_seconds is not None and not self.budget_seconds > 0:
            raise CampaignSpecError(f"budget seconds must be > 0, not {self.budget_seconds}",
                                    "set [budget] seconds to a positive number")
        if self.executor not in ("local", "ray"):
            raise CampaignSpecError(f"unknown executor {self.executor!r}", "use --executor local or ray")
        if self.jobs is not None and self.jobs < 1:
            raise CampaignSpecError(f"--jobs must be at least 1, not {self.jobs}", "pass --jobs 1 or more")


def parse_seeds(value: Any) -> list[int]:
    """``"1-100"``, ``"7"``, ``[1, 5, 9]`` or ``{start = 1, count = 100}`` -> the seeds, in order."""
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int):
            return [value]
        if isinstance(value, list):
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise ValueError
            return list(value)
        if isinstance(value, dict):
            start, count = int(value["start"]), int(value["count"])
            if count < 0:
                raise ValueError
            return list(range(start, start + count))
        if isinstance(value, str):
            first, dash, last = value.strip().partition("-")
            lo = int(first)
            hi = int(last) if dash else lo
            if hi < lo:
                raise ValueError
            return list(range(lo, hi + 1))
    except (ValueError, KeyError, TypeError):
        pass
    return _bad_seeds(value)


def _bad_seeds(value: Any) -> list[int]:
    raise CampaignSpecError(f"cannot read seeds {value!r}",
                            'write seeds = "1-100" (first-last), a list [1, 2, 3], or {start = 1, count = 100}')


_KNOWN = {"controllers", "topologies", "rates", "seeds", "steps", "checks", "persist", "round_seconds",
          "budget", "job_timeout", "executor", "jobs", "address", "minimize", "minimize_budget",
          "localize", "check_every_flowmod", "buffer_packets", "table_size", "warmup"}
_DEFAULTS = {"buffer_packets": 0, "table_size": 0, "warmup": "0"}


def load_campaign_file(path: str | Path) -> CampaignSpec:
    """Read a campaign file into a spec (not yet checked: flags may still fill it in)."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise CampaignSpecError(f"cannot read campaign file {path}: {exc.strerror or exc}",
                                "check the path") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CampaignSpecError(f"campaign file {path} is not valid TOML: {exc}", CAMPAIGN_FIX) from None
    unknown = sorted(set(data) - _KNOWN)
    if unknown:
        raise CampaignSpecError(f"campaign file {path}: unknown field(s) {', '.join(unknown)}",
                                f"use only {', '.join(sorted(_KNOWN))}")
    spec = CampaignSpec()
    try:
        if "controllers" in data:
            spec.controllers = _str_list(data["controllers"], "controllers")
        if "topologies" in data:
            spec.topologies = _str_list(data["topologies"], "topologies")
        if "rates" in data:
            spec.rate_sets = _rate_sets(data["rates"])
        if "seeds" in data:
            spec.seeds = parse_seeds(data["seeds"])
        for name, kind in (("steps", int), ("persist", int), ("round_seconds", float), ("job_timeout", float),
                           ("jobs", int), ("minimize_budget", float), ("buffer_packets", int), ("table_size", int)):
            if name in data:
                setattr(spec, name, _typed(data[name], kind, name))
        for name in ("checks", "executor", "address", "warmup"):
            if name in data:
                setattr(spec, name, str(data[name]))
        for name in ("minimize", "localize", "check_every_flowmod"):
            if name in data:
                if not isinstance(data[name], bool):
                    raise CampaignSpecError(f"{name} must be true or false", f"write {name} = true")
                setattr(spec, name, data[name])
        budget = data.get("budget", {})
        if not isinstance(budget, dict) or set(budget) - {"runs", "seconds"}:
            raise CampaignSpecError("[budget] takes runs and seconds", "write [budget] runs = 200, seconds = 3600")
        if "runs" in budget:
            spec.budget_runs = _typed(budget["runs"], int, "budget runs")
        if "seconds" in budget:
            spec.budget_seconds = _typed(budget["seconds"], float, "budget seconds")
    except CampaignSpecError as exc:
        raise CampaignSpecError(f"campaign file {path}: {exc.problem}", exc.fix) from None
    return spec


def _str_list(value: Any, name: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise CampaignSpecError(f"{name} must be a list of strings", f'write {name} = ["...", "..."]')


def _typed(value: Any, kind: type, name: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise CampaignSpecError(f"{name} must be {'an integer' if kind is int else 'a number'}, not {value!r}",
                                f"write {name} = <{'integer' if kind is int else 'number'}>")
    return kind(value)


def _rate_sets(value: Any) -> dict[str, dict[str, float]]:
    if not isinstance(value, dict) or not value:
        raise CampaignSpecError("[rates] must hold named rate sets", "write [rates.NAME] with lines like traffic = 0.3")
    out: dict[str, dict[str, float]] = {}
    for name, rates in value.items():
        if not isinstance(rates, dict):
            raise CampaignSpecError(f"rate set {name!r} must be a table of probabilities",
                                    f"write [rates.{name}] with lines like traffic = 0.3")
        pairs = [f"{k}={v}" for k, v in rates.items()]
        checked = Rates({}).with_overrides(pairs)  # unknown names, values outside [0, 1]: its own errors
        out[str(name)] = dict(checked.values)
    return out


def parse_rate_set(text: str) -> tuple[str, dict[str, float]]:
    """A ``--rate-set NAME:kind=p,kind=p`` flag -> (NAME, {kind: p})."""
    name, colon, body = text.partition(":")
    if not colon or not name.strip():
        raise CampaignSpecError(f"cannot read rate set {text!r}",
                                "write --rate-set NAME:host_migration=0.05,traffic=0.3")
    pairs = [p for p in body.split(",") if p.strip()]
    return name.strip(), dict(Rates({}).with_overrides(pairs).values)


__all__ = ["CampaignSpec", "CampaignSpecError", "JobSpec", "load_campaign_file", "parse_seeds", "parse_rate_set"]
