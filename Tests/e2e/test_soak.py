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

import pytest

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


def test_the_soaks_checks_see_a_gap_a_reset_an_error_line_and_growth():
    """The checks the minute above relies on, fed what a broken daemon would give them, so a
    soak that passes could have failed."""
    errors = soak.Errors()
    follower = soak.EventFollower(port=None, errors=errors, track=True)
    for event_id, kind, data in [(1, "picture.created", {"id": 1}), (2, "picture.deleted", {"id": 1}),
                                 (4, "picture.created", {"id": 2}), (5, "reset", {"reason": "history_pruned"})]:
        follower._apply({"id": event_id, "event": kind, "data": data})
    assert [detail for _, _, detail in errors.items] == ["id 4 after 2", "reset: {'reason': 'history_pruned'}"]
    assert follower.existing == {2}

    assert soak.ERROR_LINE.match("2026-12-02T10:00:00.000Z error shutterd: could not store component=catalog")
    assert soak.ERROR_LINE.match("<3>2026-12-02T10:00:00.000Z critical shutterd: gone")
    assert not soak.ERROR_LINE.match("2026-12-02T10:00:00.000Z warning shutterd: an error happened")

    def at(seconds, rss, fds=50, threads=11):
        return {"seconds": seconds, "rss": rss, "fds": fds, "threads": threads, "sqlite": 0, "data_dir": 0}

    steady = [at(300, 30 * soak.MIB), at(360, 31 * soak.MIB), at(420, 30 * soak.MIB)]
    assert soak.flatness(steady, 300)[1] == {}
    leaking = [at(300, 30 * soak.MIB), at(360, 35 * soak.MIB, fds=55), at(420, 40 * soak.MIB, fds=60, threads=14)]
    assert set(soak.flatness(leaking, 300)[1]) == {"rss", "fds", "threads"}
    assert soak.trends(leaking, 300)["rss"] == pytest.approx(5 * soak.MIB * 60)  # 5 MiB a minute
