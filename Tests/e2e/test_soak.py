"""The soak (issue 15), its short version: benchmarks/soak.py --short for one minute, every load at
once (an interval job at 2/s, a snap a second, 20 preview viewers, 10 event streams, a polling
script fetching thumbnails, retention deleting, the MQTT broker stopped and started), sampled
every 10 s.

Asserted: zero errors (every client served, no stream dropped, no event id skipped, the clients'
views equal the library at the end, every picture decodes, no error in the daemon's log), the
descriptors and threads not growing after the first 20 s, and that each part of the load really
happened. The code is the benchmark's own, so the script a user runs and what CI asserts cannot
drift apart."""

import importlib.util
import os

from conftest import BINARY

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "soak.py")
_spec = importlib.util.spec_from_file_location("soak", _SCRIPT)
soak = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(soak)


def test_a_minute_of_everything_at_once_has_no_error_and_no_growth_in_descriptors_or_threads():
    samples, summary = soak.run(BINARY, minutes=1, short=True, log=lambda text: None)
    context = soak.table(samples, soak.SHORT["sample_every_s"]) + "\n\n" + soak.verdict(summary)

    assert summary["errors"] == 0, context
    assert "fds" not in summary["grown"] and "threads" not in summary["grown"], context
    assert summary["settled_sample"] is not None and len(samples) >= 6, context
    # Every part of the load ran.
    assert summary["snaps"] >= 40, context
    assert summary["job_shots_taken"] >= 80 and summary["jobs"] >= 2, context
    assert summary["deleted_by_retention"] > 0, context
    assert summary["pictures_at_end"] <= soak.SHORT["retention_max_pictures"], context
    assert summary["broker_flaps"] >= 2, context
    assert summary["thumbnails"] >= 100 and 0 < summary["thumbnail_files"] <= summary["pictures_at_end"], context
    assert summary["preview_frames"] >= 20 * 60, context
    assert summary["events"] >= summary["pictures_created"] + summary["deleted_by_retention"], context
