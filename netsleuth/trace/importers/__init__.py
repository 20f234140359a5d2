"""Importers: other tools' recorded traces as netsleuth traces.

Each importer reads a foreign trace and returns an ``ImportReport``: the
netsleuth :class:`~netsleuth.trace.schema.Trace` plus what was converted,
what was not and why. Importers live in the trace layer, so they import only
``netsleuth.model`` (and the trace modules); anything from a higher layer --
such as the OpenFlow codec needed to turn raw message bytes into the
codec's JSON form -- is passed in by the caller (the CLI)::

    from netsleuth.openflow.codec import decode, msg_to_json
    report = import_sts("events.trace", decode_openflow=lambda b: msg_to_json(decode(b)))
    write_trace("trace.jsonl", report.trace)
"""

from netsleuth.trace.importers.sts import import_sts
from netsleuth.trace.importers.sts_read import STS_CLASSES, ImportReport

__all__ = ["ImportReport", "import_sts", "STS_CLASSES"]
