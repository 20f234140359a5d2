"""A campaign's report: ``OUT/campaign.json`` for machines and ``OUT/report.html`` for people.

One section per bug bucket: its signature in words, how many runs hit it,
the first seed and all seeds, the configurations it showed up in, the
minimal causal sequence in plain words, whether a replay of the MCS
reproduced it, and links to the MCS's space-time diagram (drawn by
``netsleuth viz``'s renderer, rootcause/viz.py, when the bucket was minimized),
the MCS trace and the representative run's trace, and the controller lines
a localization of the MCS ranks first (campaign/localized.py), buckets
with the same top lines marked as likely one bug.  Every path is relative
to OUT, so the folder can be moved or served as it is.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from netsleuth.rootcause.viz import viz


def write_reports(out: Path, data: dict[str, Any]) -> dict[str, str]:
    """Write campaign.json and report.html (and any missing MCS diagram); return their paths."""
    out = Path(out)
    for b in data["buckets"]:
        m = b.get("minimized") or {}
        mcs = out / m["mcs"] if m.get("mcs") else None
        if mcs is not None and mcs.exists():
            diagram = mcs.with_name("mcs.html")
            if not diagram.exists():  # minimize draws it; a bucket minimized elsewhere may lack it
                viz([mcs], diagram)
            m["diagram"] = str(diagram.relative_to(out))
    files = {"json": str(out / "campaign.json"), "html": str(out / "report.html")}
    data = dict(data, report=files)
    (out / "campaign.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    (out / "report.html").write_text(_page(data), encoding="utf-8")
    return files


def _link(href: str | None, text: str) -> str:
    return f'<a href="{html.escape(href)}">{html.escape(text)}</a>' if href else ""


def _bucket(i: int, b: dict[str, Any]) -> str:
    e = html.escape
    sig = b["signature"]
    rep = b["representative"]
    m = b.get("minimized") or {}
    if not m:
        mcs = "<p>not minimized (<code>--no-minimize</code>, or the campaign was stopped first)</p>"
    elif m.get("error"):
        mcs = f"<p>minimization failed: {e(m['error'])}</p>"
    else:
        words = "".join(f"<li>{e(w)}</li>" for w in m.get("mcs_in_words") or [])
        confirmed = ("" if m.get("confirmed") is None else "a replay of the MCS reproduces the violation"
                     if m["confirmed"] else "a replay of the MCS did <b>not</b> reproduce the violation")
        mcs = (f"<p>MCS: {m.get('inputs_before')} &rarr; {m.get('inputs_after')} inputs "
               f"({'1-minimal' if m.get('one_minimal') else e(str(m.get('stop_reason')))}); {confirmed}</p>"
               f"<ol class=mcs>{words}</ol><p>"
               + " &middot; ".join(x for x in (_link(m.get("diagram"), "space-time diagram of the MCS"),
                                               _link(m.get("mcs"), "MCS trace"),
                                               _link(m.get("confirm_trace"), "confirmation replay trace")) if x)
               + "</p>")
    mcs += _top_lines(i, b)
    seeds = ", ".join(str(s) for s in b["seeds"])
    configs = "".join(f"<li>{e(c)}</li>" for c in b["configurations"])
    return f"""<section class=bucket id="bucket-{e(b['id'])}">
<h2>{i}. {e(sig['text'])}</h2>
<p><b>{b['count']}</b> run(s); first seed <b>{b['first_seed']}</b>; seeds {e(seeds)}</p>
<details><summary>signature {e(b['id'])}</summary><pre>{e(json.dumps(sig['parts'], indent=1))}</pre></details>
<ul>{configs}</ul>
<p>representative: seed {rep['seed']}, {e(str(rep.get('inputs_to_violation')))} inputs to the violation
({_link(rep['dir'] + '/trace.jsonl', 'trace')}):</p>
<pre>{e(_violation_text(rep))}</pre>
{mcs}
</section>"""


def _top_lines(i: int, b: dict[str, Any]) -> str:
    """The bucket's top controller lines (campaign/localized.py), and the bucket it likely shares a bug with."""
    e = html.escape
    loc = (b.get("minimized") or {}).get("localize")
    if not loc:
        return ""
    same = ""
    if b.get("same_top_lines_as"):
        anchor = f'#bucket-{e(str(b.get("same_top_lines_id")))}'
        same = (f'<p class=same>same top lines as <a href="{anchor}">bucket {b["same_top_lines_as"]}</a>:'
                " likely the same bug</p>")
    if loc.get("error") or not loc.get("separable"):
        why = loc.get("error") or loc.get("message") or "not localized"
        return f"<p>top lines: none ({e(str(why))})</p>{same}"
    rows = "".join(f"<tr><td>{t['rank']}</td><td><code>{e(t['file'])}:{t['line']}</code></td><td>{e(str(t['score']))}"
                   f"</td><td>{e(t['function'] or '-')}</td><td><code>{e(t.get('source') or '')}</code></td></tr>"
                   for t in loc.get("top", []))
    return (f"<p>top lines ({e(str(loc.get('spectrum')))}, {e(str(loc.get('formula')))}; "
            f"{_link(loc.get('json'), 'localize.json')}):</p>"
            f"<table class=top><tr><th>rank</th><th>line</th><th>score</th><th>function</th><th>source</th></tr>"
            f"{rows}</table>{same}")


def _page(data: dict[str, Any]) -> str:
    e = html.escape
    d = data["definition"]
    buckets = "".join(_bucket(i, b) for i, b in enumerate(data["buckets"], 1)) or "<p>No bug found.</p>"
    failures = "".join(f"<li>seed {f['seed']} {e(str(f['controller']))} {e(str(f['topo']))}: {e(str(f['error']))} "
                       f"({_link(str(f['dir']), 'run')})</li>" for f in data["failures"])
    state = "complete" if data["completed"] else f"stopped by {e(str(data.get('stopped_by')))} (partial)"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>netsleuth campaign report</title>
<style>body{{font:14px/1.4 system-ui,sans-serif;margin:24px;max-width:1000px}}
section.bucket{{border:1px solid #ccc;border-radius:6px;padding:4px 16px;margin:12px 0}}
h2{{font-size:16px}} ol.mcs li{{font-family:monospace}}
table.top td{{padding:0 8px}} p.same{{color:#a60}}</style></head><body>
<h1>netsleuth campaign</h1>
<p>{e(", ".join(d["controllers"]))} on {e(", ".join(d["topologies"]))}; rate sets {e(", ".join(d["rate_sets"]))};
{len(d["seeds"])} seeds, {d["steps"]} steps; executor {e(str(data["executor"]))}</p>
<p id=summary>{state}: {data["recorded"]} of {data["planned"]} runs recorded ({data["finished"]} finished,
{data["failed"]} failed), {data["with_bug"]} with a persistent violation, <b>{len(data["buckets"])}</b> distinct bug(s);
{data["seconds"]} s in this run</p>
{buckets}
<h2>Failed runs</h2><ul>{failures or "<li>none</li>"}</ul>
</body></html>
"""


__all__ = ["write_reports"]


def _violation_text(rep: dict) -> str:
    """The representative's violation in the words every command prints it with."""
    from netsleuth.invariants.violation_text import violations_text

    v = rep.get("violation") or {"invariant": "violation", "message": rep.get("message") or "", "details": {}}
    return violations_text([v], trace=f"{rep['dir']}/trace.jsonl")
