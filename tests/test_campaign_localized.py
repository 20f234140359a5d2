"""A campaign bucket's top lines from a localization's data, and which buckets share them (campaign/localized.py).

The localizations themselves run against the real simple_switch in
tests/test_campaign.py; here, the bookkeeping on the data localize.json
holds: what a bucket keeps, and which buckets are marked as one bug.
"""

from __future__ import annotations

from netsleuth.campaign.localized import mark_same_top, summary, top_line_texts


def _line(path: str, line: int, rank: int, block: int, score: float = 0.5) -> dict:
    return {"file": path, "short": path.rsplit("/", 1)[-1], "line": line, "rank": rank, "block": block,
            "score": score, "function": "Switch._packet_in_handler", "source": "out_port = 1"}


def _localize(*lines: dict, separable: bool = True) -> dict:
    return {"formula": "ochiai", "spectrum": "handler calls", "runs": 9, "added_replays": 4,
            "separable": separable, "message": "" if separable else "not enough passing runs to rank: x",
            "top": list(lines)}


def _bucket(sig: str, loc: dict | None) -> dict:
    return {"id": sig, "minimized": None if loc is None else {"localize": loc}}


def test_a_bucket_keeps_five_lines_and_its_whole_first_block() -> None:
    lines = [_line("/app/s.py", 70 + k, k + 1, 1 if k < 7 else 2, 0.9 if k < 7 else 0.4) for k in range(9)]
    s = summary(_localize(*lines), "buckets/x/minimize/localize.json")
    assert [t["line"] for t in s["top"]] == [70, 71, 72, 73, 74]
    assert s["first_block"] == sorted(f"/app/s.py:{n}" for n in range(70, 77))
    assert s["top"][0]["file"] == "s.py" and s["top"][0]["path"] == "/app/s.py"
    assert top_line_texts(s)[0] == "s.py:70  0.9  Switch._packet_in_handler"


def test_buckets_with_the_same_first_block_are_marked_as_one_bug() -> None:
    a = summary(_localize(_line("/app/s.py", 77, 1, 1), _line("/app/s.py", 80, 2, 2)), "a")
    b = summary(_localize(_line("/app/s.py", 77, 1, 1), _line("/app/s.py", 90, 2, 2)), "b")
    c = summary(_localize(_line("/app/s.py", 60, 1, 1)), "c")
    unranked = summary(_localize(_line("/app/s.py", 77, 1, 1), separable=False), "d")
    buckets = [_bucket("A", a), _bucket("N", None), _bucket("C", c), _bucket("B", b), _bucket("D", unranked)]
    mark_same_top(buckets)
    assert [bk.get("same_top_lines_as") for bk in buckets] == [None, None, None, 1, None]
    assert buckets[3]["same_top_lines_id"] == "A"
    assert top_line_texts(unranked) == ["not enough passing runs to rank: x"]
    assert top_line_texts({"error": "localization needs a Python controller"}) == \
        ["not localized: localization needs a Python controller"]
