"""A bounded run of the million-picture tooling (issue 13): benchmarks/seed_catalog.py seeds
20,000 pictures, and the daemon starts on them, keeps every row, serves pages, filters, cursors,
304s and the seeded files, and removes a large excess by retention in passes.

The figures at a million are benchmarks/million_bench.py's (benchmarks/README.md); this only
keeps the tools and the paths they measure working."""

import hashlib
import json
import os
import sys

from conftest import BINARY, Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../benchmarks"))
import seed_catalog  # noqa: E402

COUNT = 20_000


def pictures(daemon):
    status, _, body = daemon.json("GET", "/status")
    assert status == 200, body
    return body["library"]["pictures"]


def test_the_daemon_starts_on_a_seeded_catalog_and_keeps_every_row(tmp_path):
    data_dir = str(tmp_path / "data")
    summary = seed_catalog.seed(data_dir, COUNT, BINARY)
    assert summary["pictures"] == COUNT
    media = os.listdir(os.path.join(data_dir, "media"))
    assert len([name for name in media if name.endswith(".jpg")]) == COUNT

    daemon = Daemon(data_dir).start()
    try:
        assert "sqlite_open_ms=" in daemon.wait_for_log("catalog opened")
        # Rows and files are compared after start-up, beside the serving daemon: nothing to repair.
        daemon.wait_for_log("media directory checked", f"rows={COUNT}", timeout=30)
        assert not [line for line in daemon.log_lines if "removed" in line], daemon.log_lines
        assert pictures(daemon) == COUNT

        # The first pages, newest first, then one page further along the cursor.
        status, headers, page = daemon.json("GET", "/library?limit=50")
        assert status == 200
        assert [item["id"] for item in page["items"]] == list(range(COUNT, COUNT - 50, -1))
        status, _, older = daemon.json("GET", page["next"])
        assert [item["id"] for item in older["items"]] == list(range(COUNT - 50, COUNT - 100, -1))
        status, _, newer = daemon.json("GET", "/library?after=10000&limit=3")
        assert [item["id"] for item in newer["items"]] == [10001, 10002, 10003]

        # Filters, alone and with cursors: every item matches, in order, and paging continues.
        status, _, labelled = daemon.json("GET", "/library?label=label-7&limit=20")
        assert status == 200 and len(labelled["items"]) == 20
        assert all(item["label"] == "label-7" for item in labelled["items"])
        ids = [item["id"] for item in labelled["items"]]
        assert ids == sorted(ids, reverse=True)
        status, _, labelled_next = daemon.json("GET", labelled["next"])
        assert all(item["label"] == "label-7" and item["id"] < ids[-1] for item in labelled_next["items"])
        status, _, job = daemon.json("GET", "/library?job=5&limit=20")
        assert status == 200 and len(job["items"]) == 20
        assert all(item["job_id"] == 5 for item in job["items"])

        # The listing's ETag revalidates (answered on the event loop); a bad query is still a 400.
        etag = headers["etag"]
        status, _, _ = daemon.request("GET", "/library?limit=50", headers={"If-None-Match": etag})
        assert status == 304
        status, _, _ = daemon.request("GET", "/library?limit=0", headers={"If-None-Match": etag})
        assert status == 400

        # A seeded row's file is the bootstrap's real picture, byte for byte as its record says.
        status, _, record = daemon.json("GET", "/library/12345")
        status, _, jpeg = daemon.request("GET", record["url"])
        assert status == 200 and hashlib.sha256(jpeg).hexdigest() == record["sha256"]
        assert len(jpeg) == record["bytes"]
    finally:
        assert daemon.stop() == 0

    # A limit 1,000 under what the catalog holds: the next snap starts a removal of 1,001
    # pictures (the snap's own one included), in passes, logged once when done.
    daemon = Daemon(data_dir, ["--retention-max-pictures", str(COUNT - 1000), "--retention-min-age-s", "0"]).start()
    try:
        daemon.wait_for_log("media directory checked", timeout=30)
        assert pictures(daemon) == COUNT
        new = daemon.snap()
        line = daemon.wait_for_log("retention removed pictures", timeout=30)
        assert "count=1001 first_id=1 " in line and "passes=5" in line, line
        assert pictures(daemon) == COUNT - 1000
        status, _, oldest = daemon.json("GET", "/library?after=0&limit=1")
        # Every 1000th seeded picture is kept, so 1000 survives and the oldest left is 1000.
        assert [item["id"] for item in oldest["items"]] == [1000]
        assert not os.path.exists(os.path.join(data_dir, "media", "999.jpg"))
        assert os.path.exists(os.path.join(data_dir, "media", f"{new['id']}.jpg"))
    finally:
        assert daemon.stop() == 0
