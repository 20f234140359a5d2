"""A campaign's state on disk: ``OUT/campaign.sqlite``, one row per job written as the job ends.

The campaign must survive being killed, SIGKILL included, and pick up where
it stopped.  SQLite gives that for free: each job's row is committed in its
own transaction when the job ends (the default rollback journal with full
sync, so a commit that returned is on disk), and a killed writer leaves the
database as of its last commit.  A restart reads which job keys are there
and runs only the others; the bug buckets are recomputed from the rows, so
they come out the same as if the campaign had never stopped.  Minimization
results are stored per bucket signature too, so a restart does not redo
them either.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from netsleuth.errors import NetsleuthError

STORE_NAME = "campaign.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    key TEXT PRIMARY KEY, idx INTEGER NOT NULL, status TEXT NOT NULL, exit_code INTEGER,
    seconds REAL, signature TEXT, record TEXT NOT NULL, finished_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS buckets (signature TEXT PRIMARY KEY, record TEXT NOT NULL);
"""


class CampaignStoreError(NetsleuthError):
    """OUT holds another campaign's state, or the state cannot be read."""


class CampaignStore:
    """The jobs done so far and the minimized buckets, in ``OUT/campaign.sqlite``."""

    def __init__(self, out: Path) -> None:
        self.path = Path(out) / STORE_NAME
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)  # explicit transactions below
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise CampaignStoreError(f"{self.path} is not a campaign store ({exc})",
                                     "pass a new --out directory, or delete the file") from None

    def close(self) -> None:
        self.db.close()

    # ---------------------------------------------------------------- the campaign's identity
    def bind(self, definition: dict[str, Any]) -> bool:
        """Tie the store to a campaign definition; True if it resumes an earlier run of the same one."""
        text = json.dumps(definition, sort_keys=True)
        row = self.db.execute("SELECT value FROM meta WHERE key = 'definition'").fetchone()
        if row is None:
            self._set("definition", text)
            self._set("created", str(time.time()))
            return False
        if row[0] != text:
            raise CampaignStoreError(
                f"{self.path.parent} holds another campaign (its controllers, topologies, rates, seeds, steps "
                "or checks differ)", "pass a new --out directory, or the same campaign definition to resume it")
        return True

    def _set(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else str(row[0])

    def add_elapsed(self, seconds: float) -> None:
        """Wall-clock seconds this invocation ran, added to the earlier ones' (the seconds budget spans restarts)."""
        self._set("elapsed", str(self.elapsed() + seconds))

    def elapsed(self) -> float:
        return float(self.meta("elapsed", "0") or 0)

    # ---------------------------------------------------------------- jobs
    def done_keys(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT key FROM jobs")}

    def record_job(self, record: dict[str, Any]) -> None:
        """One ended job, committed at once (a crash after this line keeps it)."""
        self.db.execute(
            "INSERT OR REPLACE INTO jobs (key, idx, status, exit_code, seconds, signature, record, finished_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (record["key"], record["index"], record["status"], record.get("exit_code"), record.get("seconds"),
             (record.get("signature") or {}).get("id"), json.dumps(record, sort_keys=True), time.time()))

    def jobs(self) -> list[dict[str, Any]]:
        """Every recorded job, in the campaign's job order."""
        return [json.loads(r[0]) for r in self.db.execute("SELECT record FROM jobs ORDER BY idx")]

    # ---------------------------------------------------------------- buckets
    def record_bucket(self, signature: str, record: dict[str, Any]) -> None:
        self.db.execute("INSERT OR REPLACE INTO buckets (signature, record) VALUES (?, ?)",
                        (signature, json.dumps(record, sort_keys=True)))

    def bucket(self, signature: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT record FROM buckets WHERE signature = ?", (signature,)).fetchone()
        return None if row is None else json.loads(row[0])


__all__ = ["CampaignStore", "CampaignStoreError", "STORE_NAME"]
