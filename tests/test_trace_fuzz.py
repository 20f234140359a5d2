"""A trace fuzzer: corrupted copies of a real trace, fed to every headless reader in-process.

Traces are shared as files (bug reports attach them), so every reader must
turn any corruption into the one-line ``error: ... -- fix: ...`` and exit 2
-- never a traceback, never exit 1 (which means "violation found" or "the
traces differ"). A seeded mutator derives a few hundred mutants from a real
fuzz trace of the os-ken simple_switch (``tools_fuzz_trace`` in conftest.py),
and each reader's CLI ``main`` runs on each of them.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from json_paths import json_paths

from netsleuth import cli
from netsleuth.cli import main

N_MUTANTS = 320
ONE_LINE_ERROR = re.compile(r"^error: .+ -- fix: .+$")


# ------------------------------------------------------------------ mutator
_WEIRD_VALUES: list[Any] = [
    None, True, False, 0, -1, -(2**31), 2**31, 2**64, 10**30, 1e300, -1e300, 0.5, -0.0, "", "s99", "h99",
    "\u00e9\u4e2d", "x" * 300, "s1\nerror: injected", "\x1b[31mred\x00", [], [1, 2], {}, {"a": 1}, [[[[]]]],
    "00:00:00:00:00:01", "10.0.0.1", "1e999",
]
_RAW_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "9" * 5000, "1e-400", "-0"]


def _set(obj: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return obj


def _dump(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Mutator:
    """Derives corrupted traces from the lines of a good one; one seeded RNG decides everything."""

    def __init__(self, lines: list[str], rng: random.Random) -> None:
        self.lines = lines
        self.rng = rng
        self.ops: list[Callable[[list[str]], list[str] | bytes]] = [
            self.truncate, self.delete_line, self.duplicate_line, self.swap_lines, self.flip_bytes,
            self.retype_field, self.retype_field, self.retype_field, self.unknown_name, self.nested_garbage,
            self.corrupt_header, self.raw_number, self.drop_field, self.extra_field, self.bad_utf8,
            self.shift_time, self.splice_kind, self.lone_surrogate,
        ]

    def mutant(self) -> tuple[str, bytes]:
        op = self.rng.choice(self.ops)
        out = op(list(self.lines))
        data = out if isinstance(out, bytes) else "".join(line + "\n" for line in out).encode("utf-8", "surrogatepass")
        return op.__name__, data

    def _event_index(self, lines: list[str]) -> int:
        return self.rng.randrange(1, len(lines))

    def truncate(self, lines: list[str]) -> bytes:
        data = "".join(line + "\n" for line in lines).encode()
        return data[: self.rng.randrange(len(data))]

    def delete_line(self, lines: list[str]) -> list[str]:
        del lines[self.rng.randrange(len(lines))]
        return lines

    def duplicate_line(self, lines: list[str]) -> list[str]:
        i = self.rng.randrange(len(lines))
        lines.insert(self.rng.randrange(len(lines)), lines[i])
        return lines

    def swap_lines(self, lines: list[str]) -> list[str]:
        i, j = self._event_index(lines), self._event_index(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return lines

    def flip_bytes(self, lines: list[str]) -> bytes:
        data = bytearray("".join(line + "\n" for line in lines).encode())
        for _ in range(self.rng.randint(1, 8)):
            data[self.rng.randrange(len(data))] ^= 1 << self.rng.randrange(8)
        return bytes(data)

    def retype_field(self, lines: list[str]) -> list[str]:
        i = self._event_index(lines)
        obj = json.loads(lines[i])
        path = self.rng.choice(json_paths(obj)[1:])
        lines[i] = _dump(_set(obj, path, self.rng.choice(_WEIRD_VALUES)))
        return lines

    def unknown_name(self, lines: list[str]) -> list[str]:
        i = self._event_index(lines)
        obj = json.loads(lines[i])
        names = [p for p in json_paths(obj) if p and p[-1] in ("switch", "host", "node", "node1", "node2",
                                                              "new_switch", "old_switch", "src", "dst", "dpid",
                                                              "controller", "kind")]
        path = self.rng.choice(names) if names else ("kind",)
        lines[i] = _dump(_set(obj, path, self.rng.choice(["s99", "h99", "nosuch", 99, "c9"])))
        return lines

    def nested_garbage(self, lines: list[str]) -> list[str]:
        i = self.rng.randrange(len(lines))  # the header too: some readers sniff it
        obj = json.loads(lines[i])
        path = self.rng.choice(json_paths(obj)[1:])
        depth = self.rng.choice([5, 40, 3000, 100000])
        opener, closer = self.rng.choice([("[", "]"), ('{"a":', "}")])
        garbage = opener * depth + "1" + closer * depth
        lines[i] = _dump(_set(obj, path, "@@GARBAGE@@")).replace('"@@GARBAGE@@"', garbage)
        return lines

    def corrupt_header(self, lines: list[str]) -> list[str]:
        header = json.loads(lines[0])
        choice = self.rng.randrange(5)
        if choice == 0:
            header["topology"]["switches"] = header["topology"]["switches"][:1]
        elif choice == 1:
            header["topology"] = self.rng.choice(_WEIRD_VALUES)
        elif choice == 2:
            header["version"] = self.rng.choice(_WEIRD_VALUES)
        elif choice == 3:
            header["topology"]["links"] = [["s1", 1, "s1", 1]]
        else:
            path = self.rng.choice(json_paths(header)[1:])
            _set(header, path, self.rng.choice(_WEIRD_VALUES))
        lines[0] = _dump(header)
        return lines

    def raw_number(self, lines: list[str]) -> list[str]:
        i = self._event_index(lines)
        obj = json.loads(lines[i])
        numbers = [p for p in json_paths(obj) if p and type(_get(obj, p)) in (int, float)]
        path = self.rng.choice(numbers) if numbers else ("t",)
        lines[i] = _dump(_set(obj, path, "@@NUM@@")).replace('"@@NUM@@"', self.rng.choice(_RAW_NUMBERS))
        return lines

    def drop_field(self, lines: list[str]) -> list[str]:
        i = self._event_index(lines)
        obj = json.loads(lines[i])
        paths = [p for p in json_paths(obj) if p and isinstance(p[-1], str)]
        if paths:
            path = self.rng.choice(paths)
            parent = _get(obj, path[:-1])
            del parent[path[-1]]
        lines[i] = _dump(obj)
        return lines

    def extra_field(self, lines: list[str]) -> list[str]:
        i = self._event_index(lines)
        obj = json.loads(lines[i])
        dicts = [p for p in json_paths(obj) if isinstance(_get(obj, p), dict)]
        _get(obj, self.rng.choice(dicts))["zz_extra"] = self.rng.choice(_WEIRD_VALUES)
        lines[i] = _dump(obj)
        return lines

    def bad_utf8(self, lines: list[str]) -> bytes:
        data = bytearray("".join(line + "\n" for line in lines).encode())
        at = self.rng.randrange(len(data))
        data[at:at] = self.rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"])
        return bytes(data)

    def shift_time(self, lines: list[str]) -> list[str]:
        i = self._event_index(lines)
        obj = json.loads(lines[i])
        obj["t"] = self.rng.choice([-1.0, 1e300, 1e12, 0.0, obj.get("t", 0) - 5, 5e9])
        lines[i] = _dump(obj)
        return lines

    def splice_kind(self, lines: list[str]) -> list[str]:
        """An event's fields under another event's kind (same fields, wrong meaning)."""
        i, j = self._event_index(lines), self._event_index(lines)
        a, b = json.loads(lines[i]), json.loads(lines[j])
        a["kind"] = b.get("kind")
        if "msg" in a and "msg" in b:
            a["msg"] = b["msg"]
        lines[i] = _dump(a)
        return lines

    def lone_surrogate(self, lines: list[str]) -> list[str]:
        i = self._event_index(lines)
        obj = json.loads(lines[i])
        strings = [p for p in json_paths(obj) if p and isinstance(_get(obj, p), str)]
        path = self.rng.choice(strings) if strings else ("kind",)
        lines[i] = _dump(_set(obj, path, "@@S@@")).replace('"@@S@@"', '"a\\ud800b"')
        return lines


def _get(obj: Any, path: tuple) -> Any:
    for key in path:
        obj = obj[key]
    return obj


# ------------------------------------------------------------------ readers
def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _readers(trace: Path, original: Path, work: Path, traffic_id: str) -> dict[str, list[str]]:
    commands = work / "commands.txt"
    commands.write_text("step 20\nshow state\ncheck\nstep 1000\nwhere\nshow next 2\n", encoding="utf-8")
    return {
        "invariants": ["invariants", str(trace)],
        "races": ["races", str(trace)],
        "cluster": ["cluster", str(trace)],
        "diff": ["diff", str(original), str(trace)],
        "reduce": ["reduce", str(trace), "--out", str(work / "reduced.jsonl")],
        "trace-packet": ["trace-packet", str(trace), traffic_id],
        "pcap": ["pcap", str(trace), "--out", str(work / "out.pcap"), "--dataplane"],
        "viz": ["viz", str(trace), "--html", str(work / "out.html")],
        "step": ["step", str(trace), "--headless", "--commands", str(commands)],
    }


@pytest.fixture(scope="module")
def source_trace(tools_fuzz_trace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real fuzz trace up to a little after its first persistent violation (keeps 2,700 runs quick)."""
    lines = tools_fuzz_trace.read_text(encoding="utf-8").splitlines()
    end = next((i for i, line in enumerate(lines)
                if '"kind":"violation"' in line and '"persistent":true' in line), len(lines) - 1)
    out = tmp_path_factory.mktemp("fuzz_source") / "trace.jsonl"
    out.write_text("\n".join(lines[: min(len(lines), end + 15)]) + "\n", encoding="utf-8")
    return out


@pytest.mark.real
def test_every_reader_survives_every_mutant(source_trace: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # main() is the real entry point, error handling included; only building
    # its argparse tree (as long as a small trace's read) is done once.
    monkeypatch.setattr(cli, "build_parser", functools.lru_cache(maxsize=1)(cli.build_parser))
    lines = source_trace.read_text(encoding="utf-8").splitlines()
    traffic_id = next(json.loads(line)["id"] for line in lines[1:] if '"kind":"traffic"' in line)
    # The unmutated trace reads cleanly everywhere: a fuzzer whose readers
    # reject everything would prove nothing.
    for name, argv in _readers(source_trace, source_trace, tmp_path, traffic_id).items():
        code, _, err = _run(argv)
        assert code in (0, 1), f"{name} on the good trace: exit {code}: {err}"

    rng = random.Random(20240611)
    mutator = Mutator(lines, rng)
    mutant = tmp_path / "mutant.jsonl"
    failures: list[str] = []
    outcomes: dict[int, int] = {0: 0, 1: 0, 2: 0}
    for n in range(N_MUTANTS):
        op, data = mutator.mutant()
        mutant.write_bytes(data)
        for name, argv in _readers(mutant, source_trace, tmp_path, traffic_id).items():
            try:
                code, _, err = _run(argv)
            except BaseException as exc:  # noqa: BLE001 - the point: nothing may escape main()
                failures.append(f"mutant {n} ({op}) {name}: uncaught {type(exc).__name__}: {exc!s:.300}")
                continue
            if code not in (0, 1, 2):
                failures.append(f"mutant {n} ({op}) {name}: exit {code}")
            elif code == 2 and not (err.count("\n") == 1 and ONE_LINE_ERROR.match(err.rstrip("\n"))):
                failures.append(f"mutant {n} ({op}) {name}: exit 2 without the one-line error: {err!r:.300}")
            else:
                outcomes[code] += 1
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:40])
    # The mutants are not all rejected at the first line: some still read and run.
    assert outcomes[2] > 0 and outcomes[0] + outcomes[1] > 0, outcomes


# ------------------------------------------------------------- SDNRacer hb.json
HB_TRACE = (Path(__file__).resolve().parents[2] / "shared" / "data" / "sdnracer" / "traces"
            / "floodlight_forwarding-StarTopology2-steps200.hb.json")  # the corpus's smallest (108 events)
N_HB_MUTANTS = 120


def test_races_and_cluster_survive_hb_json_mutants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same mutations on a real SDNRacer hb.json (every line an event: no header to corrupt)."""
    monkeypatch.setattr(cli, "build_parser", functools.lru_cache(maxsize=1)(cli.build_parser))
    lines = HB_TRACE.read_text(encoding="utf-8").splitlines()
    for argv in (["races", str(HB_TRACE)], ["cluster", str(HB_TRACE)]):
        assert _run(argv)[0] == 0, argv
    mutator = Mutator(lines, random.Random(7))
    mutator.ops = [op for op in mutator.ops if op.__name__ != "corrupt_header"]
    mutant = tmp_path / "mutant.hb.json"
    failures: list[str] = []
    exits: set[int] = set()
    for n in range(N_HB_MUTANTS):
        op, data = mutator.mutant()
        mutant.write_bytes(data)
        for argv in (["races", str(mutant)], ["cluster", str(mutant)]):
            try:
                code, _, err = _run(argv)
            except BaseException as exc:  # noqa: BLE001 - nothing may escape main()
                failures.append(f"mutant {n} ({op}) {argv[0]}: uncaught {type(exc).__name__}: {exc!s:.300}")
                continue
            exits.add(code)
            if code not in (0, 1, 2):
                failures.append(f"mutant {n} ({op}) {argv[0]}: exit {code}")
            elif code == 2 and not (err.count("\n") == 1 and ONE_LINE_ERROR.match(err.rstrip("\n"))):
                failures.append(f"mutant {n} ({op}) {argv[0]}: exit 2 without the one-line error: {err!r:.300}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:40])
    assert {0, 2} <= exits, exits
