"""Storage limits: retention by count with pictures marked keep, and a full disk (a real ENOSPC on a
small tmpfs, and the free-space floor) that refuses new pictures with 507 and harms nothing stored."""

import hashlib
import json
import os
import subprocess

import pytest

from test_snap_library import djpeg_size


@pytest.fixture
def tiny_fs(tmp_path):
    """A 2 MiB tmpfs mounted for the test, unmounted afterwards; skips where mounting is not permitted.

    Request it before make_daemon, so the daemons are stopped before the unmount."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {result.stderr.strip()}")
    yield mount_point
    if subprocess.run(["umount", str(mount_point)], capture_output=True).returncode != 0:
        # A daemon still holding files would make it busy; a lazy unmount still frees it.
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def all_records(daemon):
    records, path = [], "/library?limit=500"
    while path:
        status, _, page = daemon.json("GET", path)
        assert status == 200
        records += page["items"]
        path = page["next"]
    return records


def assert_intact(daemon, record):
    status, _, jpeg = daemon.request("GET", record["url"])
    assert status == 200, record
    assert hashlib.sha256(jpeg).hexdigest() == record["sha256"]
    assert djpeg_size(jpeg) == (record["width"], record["height"])


def test_retention_by_count_spares_a_kept_picture(make_daemon, tmp_path):
    d = make_daemon(["--size", "320x240", "--fps", "60", "--retention-max-pictures", "5",
                     "--retention-min-age-s", "0"])
    first = [d.snap() for _ in range(3)]
    kept = first[1]
    status, _, record = d.json("PATCH", f"/library/{kept['id']}", body=json.dumps({"keep": True}))
    assert status == 200 and record["keep"] is True and record["id"] == kept["id"]
    later = [d.snap() for _ in range(5)]

    library = all_records(d)
    ids = [r["id"] for r in library]
    assert len(library) == 5
    assert kept["id"] in ids
    assert sorted(ids) == sorted([kept["id"]] + [r["id"] for r in later[1:]])
    media = tmp_path / "data" / "media"
    for gone in [first[0], first[2], later[0]]:
        assert d.request("GET", gone["url"])[0] == 404
        assert d.json("GET", f"/library/{gone['id']}")[0] == 404
        assert not (media / f"{gone['id']}.jpg").exists()
    assert sorted(os.listdir(media)) == sorted(f"{i}.jpg" for i in ids)
    for record in library:
        assert_intact(d, record)
    _, _, status_doc = d.json("GET", "/status")
    assert status_doc["library"]["pictures"] == 5
    assert status_doc["library"]["bytes"] == sum(r["bytes"] for r in library)


def test_patch_keep_validates_its_body(make_daemon):
    d = make_daemon(["--size", "320x240", "--fps", "60"])
    record = d.snap()
    path = f"/library/{record['id']}"
    status, _, body = d.json("PATCH", path, body=json.dumps({"keep": True, "colour": "red", "tags": [1]}))
    assert status == 400 and "'colour'" in body["detail"] and "'tags'" in body["detail"], body
    for bad in ({"keep": "yes"}, {"keep": 1}, {"keep": None}, {}, [True]):
        status, _, body = d.json("PATCH", path, body=json.dumps(bad))
        assert status == 400 and "keep" in body["detail"], (bad, body)
    assert d.json("PATCH", path, body="not json")[0] == 400
    assert d.json("PATCH", "/library/999999", body=json.dumps({"keep": True}))[0] == 404
    status, _, patched = d.json("PATCH", path, body=json.dumps({"keep": False}))
    assert status == 200 and patched == record


def test_a_full_disk_refuses_snaps_with_507_and_harms_nothing(tiny_fs, make_daemon):
    d = make_daemon(["--size", "640x480", "--fps", "60", "--min-free-bytes", "0"], data_dir=tiny_fs / "data")
    stored, refusal = [], None
    for _ in range(300):
        status, _, body = d.json("POST", "/snap")
        if status == 507:
            refusal = body
            break
        assert status == 201, body
        stored.append(body)
    assert refusal is not None, "the 2 MiB tmpfs never filled up"
    assert "storage" in refusal["error"], refusal
    assert len(stored) >= 3

    # Health says why snaps are refused.
    status, _, health = d.json("GET", "/healthz")
    assert status == 503 and health["status"] == "degraded" and "storage full" in health["reason"], health
    # Nothing else answers 500 on the full disk: a thumbnail is served without being cached (or
    # cached if it fits), marking a picture kept is stored or refused with 507.
    status, headers, thumbnail = d.request("GET", stored[-1]["url"] + "?width=64")
    assert status == 200 and headers["content-type"] == "image/jpeg", (status, thumbnail[:200])
    assert djpeg_size(thumbnail)[0] < 640
    status, _, body = d.json("PATCH", f"/library/{stored[-1]['id']}", body=json.dumps({"keep": True}))
    assert status in (200, 507), (status, body)
    if status == 507:
        assert body["error"] == "storage full" and body["detail"], body
    thumbs = tiny_fs / "data" / "media" / "thumbs"
    assert not [name for name in (os.listdir(thumbs) if thumbs.exists() else []) if name.endswith(".tmp")]
    library = all_records(d)
    assert sorted(r["id"] for r in library) == sorted(r["id"] for r in stored)
    for record in library:
        assert_intact(d, record)
    # Nothing of the failed write is left: no temporary file, no file without a record.
    media = tiny_fs / "data" / "media"
    assert sorted(name for name in os.listdir(media) if name != "thumbs") == sorted(
        f"{r['id']}.jpg" for r in stored)

    # Deleting is how a user makes room, so it must work on the full disk (two, since the
    # thumbnail and the keep above may have taken what little was left).
    for gone in stored[:2]:
        assert d.request("DELETE", f"/library/{gone['id']}")[0] == 204
    status, _, record = d.json("POST", "/snap")
    assert status == 201, record
    assert_intact(d, record)
    assert d.json("GET", "/healthz")[2]["status"] == "ok"


def test_a_free_space_floor_above_the_disk_refuses_the_first_snap(tiny_fs, make_daemon):
    d = make_daemon(["--size", "320x240", "--fps", "60", "--min-free-bytes", str(3 * 1024 * 1024)],
                    data_dir=tiny_fs / "data")
    status, _, body = d.json("POST", "/snap")
    assert status == 507 and "storage" in body["error"], body
    assert all_records(d) == []
    assert os.listdir(tiny_fs / "data" / "media") == []
    status, _, health = d.json("GET", "/healthz")
    assert status == 503 and health["status"] == "degraded", health
    assert "min_free_bytes" in health["reason"] and str(tiny_fs) not in health["reason"], health


def test_thumbnails_count_in_the_library_and_their_leftovers_go_at_start_up(make_daemon, tmp_path):
    d = make_daemon(["--size", "640x480", "--fps", "60", "--min-free-bytes", "0"])
    record = d.snap()
    status, _, thumbnail = d.request("GET", record["url"] + "?width=64")
    assert status == 200
    thumbs = tmp_path / "data" / "media" / "thumbs"
    cached = os.listdir(thumbs)
    assert len(cached) == 1 and os.path.getsize(thumbs / cached[0]) == len(thumbnail)
    library = d.json("GET", "/status")[2]["library"]
    assert library["thumbnail_bytes"] == len(thumbnail)
    assert library["bytes"] == record["bytes"] + len(thumbnail)

    # What a crash or a full disk leaves in thumbs/ goes at the next start, as in media/.
    assert d.stop() == 0
    (thumbs / f".{record['id']}-128.jpg.12345.tmp").write_bytes(b"\xff\xd8partial")
    (thumbs / "999-64.jpg").write_bytes(thumbnail)
    d.start()
    assert sorted(os.listdir(thumbs)) == cached
    d.wait_for_log("unfinished thumbnail")
    assert d.json("GET", "/status")[2]["library"]["bytes"] == record["bytes"] + len(thumbnail)
