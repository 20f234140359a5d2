"""The documentation site: it builds with no warning, its CLI reference names every command and
option the parser has, its trace-format page every event kind, and its pages render in a browser.

The site is built once per test session into a temporary directory, with Sphinx run exactly as
``make docs`` runs it (``-W``: a warning is an error).
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from netsleuth.cli import build_parser
from netsleuth.trace import schema as ts

pytestmark = [pytest.mark.real, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(ROOT / "docs"), str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the docs do not build cleanly:\n{proc.stdout}\n{proc.stderr}"
    return out


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], list[str]]:
    """Every (sub)command's path and its long option strings, read off the parser itself."""
    found = {path: sorted(s for a in parser._actions for s in a.option_strings if s.startswith("--"))}
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                found.update(_commands(sub, (*path, name)))
    return found


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))


def test_the_cli_reference_names_every_command_and_option(site: Path) -> None:
    text = _text(site / "reference" / "cli.html")
    commands = _commands(build_parser())
    assert len(commands) > 20, sorted(commands)
    missing = []
    flat = " ".join(text.split())
    for path, options in sorted(commands.items()):
        if path and f"{path[-1]} ¶" not in flat:   # each command has a section of its own
            missing.append(" ".join(path))
        missing += [f"{' '.join(path)} {o}" for o in options if o not in text]
    assert not missing, f"not in the generated CLI reference: {missing}"


def test_the_trace_format_page_lists_every_event_kind(site: Path) -> None:
    text = _text(site / "reference" / "trace-format.html")
    missing = [k for k in ts.EVENT_KINDS if k not in text]
    assert not missing and len(ts.EVENT_KINDS) > 20, missing


def test_every_guide_page_is_reachable_from_the_front_page(site: Path) -> None:
    front = (site / "index.html").read_text()
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix(".html").as_posix()
                   for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
    assert pages, "no pages"
    missing = [p for p in pages if p != "index.html" and f'href="{p}"' not in front]
    assert not missing, f"pages not in the front page's navigation: {missing}"


def _screenshot(url: str, shot: Path) -> None:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: run `make setup` (Debian package chromium)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", "--window-size=1200,900", f"--screenshot={shot}", url],
                       capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("page", ["index.html", "tutorials/app-developer.html"])
def test_pages_render_in_a_browser(site: Path, page: str, tmp_path: Path) -> None:
    """Headless Chromium draws the page with its theme: a light page with dark text on most rows,
    and a sidebar (the theme's stylesheet was found)."""
    from PIL import Image

    shot = tmp_path / "shot.png"
    _screenshot((site / page).as_uri(), shot)
    img = Image.open(shot).convert("L")
    assert img.size == (1200, 900)
    w, h = img.size
    px = img.load()
    rows_with_text = sum(1 for y in range(0, h, 3) if any(px[x, y] < 110 for x in range(300, w - 100, 2)))
    assert rows_with_text > 40, f"{page}: hardly any text drawn ({rows_with_text} rows)"
    # the sidebar is shaded, unlike the white page body: the theme's stylesheet was applied
    def background(xs: range) -> int:
        values = [px[x, y] for x in xs for y in range(100, h - 20, 7)]
        return max(set(values), key=values.count)

    sidebar, body = background(range(5, 40)), background(range(w - 150, w - 30))
    assert sidebar < body, f"{page}: no shaded sidebar (sidebar {sidebar}, body {body}): unstyled page?"
