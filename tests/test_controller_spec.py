"""The controller spec as one value: ``ControllerSpec.parse`` reads what ``str(spec)`` writes, for every kind.

The headers of the traces shipped in tests/data and examples/ read back to
their own text, so the trace format stays what it was.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netsleuth.controllers.spec import UntrustedControllerError, controllers_for_trace, validate
from netsleuth.errors import ControllerError
from netsleuth.trace.controller_spec import (
    POX_OWNED,
    VALUE_OPTIONS,
    ControllerSpec,
    Kind,
    join_all,
    parse_all,
)

ROOT = Path(__file__).resolve().parents[1]

modules = st.from_regex(r"[a-z_][a-z0-9_]{0,5}(\.[a-z_][a-z0-9_]{0,5}){0,2}", fullmatch=True)
app_files = st.builds(lambda d, n: f"/{d}/{n}.py", st.text("ab c'\"$-_", min_size=1, max_size=6),
                      st.text("ab_-", min_size=1, max_size=6))
values = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
options = st.one_of(
    st.builds(lambda n, v: f"{n}={v}", st.sampled_from(sorted(VALUE_OPTIONS)), values),
    st.sampled_from(["--observe-links", "--verbose", "--noexplicit-drop", "-v"]),
    st.builds(lambda v: f"--observe-links={v}", values))
components = st.from_regex(r"[a-z_][a-z0-9_]{0,5}(\.[a-z_][a-z0-9_]{0,5}){0,2}(:[a-z_]{1,4})?", fullmatch=True) \
    .filter(lambda c: c not in POX_OWNED)
pox_options = st.builds(lambda n, v: f"--{n}={v}", st.text("abc-_", min_size=1, max_size=5), values)
kind_values = {k.value for k in Kind}
app_names = st.from_regex(r"[A-Za-z0-9_.\- ]{1,8}(:[A-Za-z0-9_]{1,5})?", fullmatch=True) \
    .filter(lambda n: n.partition(":")[0] not in kind_values and n.strip() == n and n)


@st.composite
def pox_words(draw: st.DrawFn) -> tuple[str, ...]:
    words = draw(st.lists(st.one_of(components, pox_options), max_size=4))
    return (*words, draw(components)) if draw(st.booleans()) else (draw(components), *words)


specs = st.one_of(
    st.builds(ControllerSpec, st.sampled_from([Kind.OSKEN, Kind.RYU]),
              apps=st.lists(st.one_of(modules, app_files), min_size=1, max_size=3).map(tuple),
              options=st.lists(options, max_size=3).map(tuple), in_model=st.booleans()),
    st.builds(ControllerSpec, st.just(Kind.FAUCET), config=st.one_of(st.just("auto"), values.filter(bool))),
    st.builds(ControllerSpec, st.just(Kind.POX), command=pox_words(), in_model=st.booleans()),
    st.builds(ControllerSpec, st.just(Kind.CMD),
              command=st.builds(lambda a, b: (*a, "{port}", *b), st.lists(values, max_size=2),
                                st.lists(values, max_size=2))),
    st.builds(ControllerSpec, st.just(Kind.TCP), host=values.filter(bool), port=st.integers(0, 70000)),
    st.builds(ControllerSpec, st.just(Kind.APP), name=app_names, in_model=st.booleans()),
    st.builds(ControllerSpec, st.just(Kind.DEFINED), name=values.filter(bool)),
)


@given(specs)
def test_a_spec_reads_back_from_its_text(spec: ControllerSpec) -> None:
    assert ControllerSpec.parse(str(spec)) == spec


@given(st.lists(specs.filter(lambda s: " + " not in str(s)), max_size=3))
def test_a_header_reads_back_from_its_text(many: list[ControllerSpec]) -> None:
    assert parse_all(join_all(many)) == tuple(many)


prefixes = st.sampled_from(["", "app:", "osken:", "ryu:", "faucet:", "pox:", "cmd:", "tcp:", "defined:",
                            "app:osken:", "app:ryu:", "app:pox:", "app:cmd:"])


@given(prefixes, st.text(" ,=-./'\"abc{}port:_019\\", max_size=24))
def test_any_text_that_parses_is_written_as_it_reads(prefix: str, rest: str) -> None:
    try:
        spec = ControllerSpec.parse(prefix + rest)
    except ControllerError as exc:
        assert exc.fix  # refused with the fix
        return
    assert ControllerSpec.parse(str(spec)) == spec


def _headers() -> list[str]:
    found = []
    for path in sorted([*ROOT.glob("tests/data/**/*.jsonl"), *ROOT.glob("examples/**/*.jsonl"),
                        *ROOT.glob("tests/data/**/*.jsonl.gz")]):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            line = f.readline()
        try:
            header = json.loads(line)
        except ValueError:
            continue
        if isinstance(header, dict) and isinstance(header.get("controller"), str):
            found.append(header["controller"])
    return found


def test_the_shipped_traces_headers_read_back_to_their_own_text() -> None:
    headers = _headers()
    assert headers
    for text in headers:
        assert join_all(parse_all(text)) == text


@pytest.mark.parametrize(("text", "kind", "in_model"), [
    ("osken:os_ken.app.simple_switch", Kind.OSKEN, False), ("ryu:a.py --observe-links", Kind.RYU, False),
    ("faucet:auto", Kind.FAUCET, False), ("pox:forwarding.l2_learning", Kind.POX, False),
    ("cmd:ovs-testcontroller ptcp:{port}", Kind.CMD, False), ("tcp:127.0.0.1:6633", Kind.TCP, False),
    ("app:pyswitch", Kind.APP, True), ("pyswitch", Kind.APP, False), ("c1", Kind.APP, False),
    ("app:osken:os_ken.app.simple_switch", Kind.OSKEN, True), ("app:pox:forwarding.hub", Kind.POX, True),
    ("defined:mobility", Kind.DEFINED, False)])
def test_kinds(text: str, kind: Kind, in_model: bool) -> None:
    spec = ControllerSpec.parse(text)
    assert (spec.kind, spec.in_model) == (kind, in_model)
    assert str(spec) == text  # these are written as users write them: no quotes where none are needed


def test_the_user_may_run_live_controllers_only() -> None:
    for text in ("pyswitch", "app:osken:os_ken.app.simple_switch", "defined:mobility"):
        with pytest.raises(ControllerError, match="not understood"):
            validate(ControllerSpec.parse(text))
    with pytest.raises(ControllerError, match="unknown controller kind 'nox'"):
        validate(ControllerSpec.parse("nox:forwarding"))


def test_only_apps_the_model_checker_runs_are_hosted() -> None:
    assert str(ControllerSpec.parse("osken:os_ken.app.simple_switch").hosted()) == "app:osken:os_ken.app.simple_switch"
    assert str(ControllerSpec.parse("app:osken:os_ken.app.simple_switch").real()) == "osken:os_ken.app.simple_switch"
    with pytest.raises(ControllerError, match="cannot run"):
        ControllerSpec.parse("faucet:auto").hosted()


def test_validation_makes_paths_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sw.py").write_text("")
    (tmp_path / "x.conf").write_text("")
    monkeypatch.chdir(tmp_path)
    parsed = ControllerSpec.parse("ryu:sw.py,pkg.mod --config-file x.conf")
    assert parsed.apps == ("sw.py", "pkg.mod") and parsed.options == ("--config-file=x.conf",)
    checked = validate(parsed)
    assert checked.apps == (str(tmp_path / "sw.py"), "pkg.mod")
    assert checked.options == (f"--config-file={tmp_path / 'x.conf'}",)
    assert ControllerSpec.parse(str(checked)) == checked


def test_a_trace_command_runs_only_when_trusted() -> None:
    header = "cmd:ovs-testcontroller ptcp:{port} + tcp:127.0.0.1:6633"
    with pytest.raises(UntrustedControllerError, match="does not run commands from a trace"):
        controllers_for_trace(header, None)
    assert join_all(controllers_for_trace(header, None, trust=True)) == header
