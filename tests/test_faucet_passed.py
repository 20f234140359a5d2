"""Faucet's checker runs once per config: a pass is remembered by the file's bytes and the Faucet that
judged them, a rejection never (its complaint is quoted every time).

The checker here is a script standing in for ``check_faucet_config`` that notes each run and passes or
rejects as told; a real Faucet environment's checker is what tests/test_faucet.py runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netsleuth.controllers.faucet import check_user_config, render_config
from netsleuth.errors import ControllerError
from netsleuth.model.topo_builders import parse_topo

pytestmark = pytest.mark.real   # the stand-in checker is a program of its own


def _faucet_env(root: Path, version: str, verdict: int) -> Path:
    """A Faucet environment's layout: bin/check_faucet_config and the distribution's dist-info."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    _set_version(root, version)
    checker = bin_dir / "check_faucet_config"
    checker.write_text(f"#!/bin/sh\necho run >> {root / 'runs'}\necho 'bad config' >&2\nexit {verdict}\n")
    checker.chmod(0o755)
    return bin_dir


def _set_version(root: Path, version: str) -> None:
    site = root / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    for old in site.glob("faucet-*.dist-info"):
        old.rmdir()
    (site / f"faucet-{version}.dist-info").mkdir()


def _runs(root: Path) -> int:
    runs = root / "runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def test_a_pass_is_remembered_by_bytes_and_version_and_a_rejection_never(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETSLEUTH_CACHE_DIR", str(tmp_path / "cache"))
    env = tmp_path / "faucet"
    bin_dir = _faucet_env(env, "1.10.11", verdict=0)
    config = tmp_path / "faucet.yaml"
    config.write_text(render_config(parse_topo("linear,2")))
    check_user_config(config, bin_dir)
    check_user_config(config, bin_dir)
    assert _runs(env) == 1, "the same bytes before the same checker: judged once"
    config.write_text(config.read_text() + "\n# edited\n")
    check_user_config(config, bin_dir)
    assert _runs(env) == 2, "other bytes: judged again"
    _set_version(env, "1.10.12")   # the same checker script, another release installed beside it
    check_user_config(config, bin_dir)
    assert _runs(env) == 3, "another Faucet: judged again"

    _faucet_env(env, "1.10.12", verdict=1)
    rejected = tmp_path / "rejected.yaml"
    rejected.write_text(render_config(parse_topo("linear,3")))
    for expected_runs in (4, 5):
        with pytest.raises(ControllerError, match="Faucet rejects its config .*bad config"):
            check_user_config(rejected, bin_dir)
        assert _runs(env) == expected_runs, "a rejection is never remembered"

    included = tmp_path / "with-include.yaml"
    included.write_text("include:\n  - other.yaml\n")
    _faucet_env(env, "1.10.12", verdict=0)
    check_user_config(included, bin_dir)
    check_user_config(included, bin_dir)
    assert _runs(env) == 7, "a config that includes others is judged every time (their bytes are not hashed)"
