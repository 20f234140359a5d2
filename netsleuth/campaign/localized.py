"""A campaign bucket's top lines: the controller code its minimal sequence points at.

Once a bucket is minimized (campaign/runner.py), its MCS is localized the
way ``netsleuth localize`` does it (jobs/localize.py): the minimization ran
without coverage, to keep its pace, so localize's own replays make the
spectrum -- the MCS, the MCS without each of its inputs (1-minimality makes
those pass) and its reorderings, each with the controller's lines measured;
for an os-ken or POX controller every handler call is a run of its own.
That costs about twice as many replays as the MCS has inputs, a fraction of
the minimization.

The bucket keeps the few best lines (file:line, score, function) for the
summary and the report, and its *first block* -- the lines no run told
apart, ranked first.  Two buckets whose first blocks are the same lines are
most likely one bug seen through two symptoms (a blackhole and the
reachability it cuts), so the later one is marked "same top lines as
bucket N".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netsleuth.errors import NetsleuthError

SHOWN = 5          # top lines kept per bucket for the summary and the report
DEPTH = 50         # lines ranked, so a first block longer than SHOWN is still known whole


def localize_bucket(out: Path, bucket_id: str, controller: str) -> dict[str, Any]:
    """Localize the minimized bucket under ``OUT/buckets/ID/minimize``; its summary for campaign.json.

    A controller that cannot be measured (not Python) or a localization that fails gives
    ``{"error": ...}``: the bucket stays, without lines."""
    from netsleuth.jobs.localize import LocalizeOptions, localize

    where = Path(out) / "buckets" / bucket_id / "minimize"
    try:
        data = localize(LocalizeOptions(where, top=DEPTH, controller=[controller]))
    except NetsleuthError as exc:
        return {"error": exc.one_line()}
    return summary(data, f"buckets/{bucket_id}/minimize/localize.json")


def summary(data: dict[str, Any], path: str) -> dict[str, Any]:
    """The part of a localize.json a campaign keeps: the top lines, the first block, how it ranked."""
    top = [{"file": t["short"], "path": t["file"], "line": t["line"], "score": t["score"], "rank": t["rank"],
            "block": t["block"], "function": t["function"], "source": t["source"]}
           for t in data.get("top", [])]
    first = sorted({f"{t['path']}:{t['line']}" for t in top if t["block"] == 1})
    return {"formula": data.get("formula"), "spectrum": data.get("spectrum"), "runs": data.get("runs"),
            "added_replays": data.get("added_replays"), "separable": bool(data.get("separable")),
            "message": data.get("message", ""), "top": top[:SHOWN], "first_block": first, "json": path}


def mark_same_top(buckets: list[dict[str, Any]]) -> None:
    """Mark each bucket whose first block equals an earlier bucket's: ``same_top_lines_as`` = its number
    (1-based, the report's numbering) and ``same_top_lines_id`` = its signature id."""
    seen: dict[tuple[str, ...], tuple[int, str]] = {}
    for i, b in enumerate(buckets, 1):
        loc = (b.get("minimized") or {}).get("localize") or {}
        b.pop("same_top_lines_as", None)
        b.pop("same_top_lines_id", None)
        block = tuple(loc.get("first_block") or ())
        if not block or not loc.get("separable"):
            continue
        if block in seen:
            b["same_top_lines_as"], b["same_top_lines_id"] = seen[block]
        else:
            seen[block] = (i, b["id"])


def top_line_texts(loc: dict[str, Any]) -> list[str]:
    """One line per top line, ``file:line  score  function``, or why there are none."""
    if loc.get("error"):
        return [f"not localized: {loc['error']}"]
    if not loc.get("separable"):
        return [loc.get("message") or "not localized"]
    return [f"{t['file']}:{t['line']}  {t['score']}  {t['function'] or '-'}" for t in loc.get("top", [])]


__all__ = ["localize_bucket", "mark_same_top", "summary", "top_line_texts"]
