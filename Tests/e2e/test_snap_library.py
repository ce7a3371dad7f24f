"""Snap, library, media and preview through a real HTTP client, checked with a real JPEG decoder."""

import hashlib
import json
import re
import subprocess
import time


def djpeg_size(jpeg: bytes):
    """Decodes with djpeg (libjpeg-turbo-progs) and returns (width, height) of the PNM it writes."""
    out = subprocess.run(["djpeg", "-pnm"], input=jpeg, capture_output=True, check=True).stdout
    fields = out.split(maxsplit=4)
    assert fields[0] in (b"P5", b"P6")
    return int(fields[1]), int(fields[2])


def test_curl_snap_stores_a_picture_a_decoder_opens(daemon, tmp_path):
    out = subprocess.run(
        ["curl", "-sS", "-X", "POST", "-D", "-", f"http://127.0.0.1:{daemon.port}/snap"],
        capture_output=True, check=True).stdout.decode()
    head, body = out.split("\r\n\r\n", 1)
    assert head.startswith("HTTP/1.1 201 Created")
    record = json.loads(body)
    assert f"Location: /library/{record['id']}" in head
    assert record["width"] == 640 and record["height"] == 480
    assert record["url"] == f"/media/{record['id']}.jpg"
    assert record["source"] == "test-pattern"
    assert record["taken_at"].endswith("Z")

    status, headers, jpeg = daemon.request("GET", record["url"])
    assert status == 200
    assert headers["content-type"] == "image/jpeg"
    assert len(jpeg) == record["bytes"]
    assert hashlib.sha256(jpeg).hexdigest() == record["sha256"]
    assert djpeg_size(jpeg) == (640, 480)
    # The file on disk is the same bytes, named by id.
    assert (tmp_path / "data" / "media" / f"{record['id']}.jpg").read_bytes() == jpeg

    status, _, same = daemon.json("GET", f"/library/{record['id']}")
    assert status == 200 and same == record


def test_each_snap_is_a_new_frame(daemon):
    first, second = daemon.snap(), daemon.snap()
    assert second["id"] > first["id"]
    assert first["sha256"] != second["sha256"]
    assert second["taken_at"] >= first["taken_at"]


def test_snap_uses_a_frame_captured_after_the_request(make_daemon):
    # At 2 fps a stale frame would be up to 500 ms old; a fresh one is taken after we ask.
    d = make_daemon(["--size", "320x240", "--fps", "2"])
    d.request("GET", "/preview.jpg")
    before = time.time()
    record = d.snap()
    taken = time.mktime(time.strptime(record["taken_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    taken += int(record["taken_at"][20:23]) / 1000
    assert taken >= before - 0.05, (record["taken_at"], before)


def test_library_pages_through_120_pictures(daemon):
    ids = [daemon.snap()["id"] for _ in range(120)]
    seen = []
    path = "/library?limit=50"
    pages = 0
    while path:
        status, headers, page = daemon.json("GET", path)
        assert status == 200
        seen += [item["id"] for item in page["items"]]
        path = page["next"]
        pages += 1
    assert pages == 3
    assert seen == sorted(ids, reverse=True), "newest first, no gaps, no duplicates"

    # Forward paging from a cursor: what came after, in the order taken.
    status, _, page = daemon.json("GET", f"/library?after={ids[99]}&limit=50")
    assert [item["id"] for item in page["items"]] == ids[100:]
    assert page["next"] is None


def test_library_is_cheap_to_poll_with_etags(daemon):
    daemon.snap()
    status, headers, _ = daemon.request("GET", "/library")
    etag = headers["etag"]
    status, headers, body = daemon.request("GET", "/library", headers={"If-None-Match": etag})
    assert status == 304 and body == b""
    daemon.snap()
    status, headers, _ = daemon.request("GET", "/library", headers={"If-None-Match": etag})
    assert status == 200 and headers["etag"] != etag


def test_library_rejects_bad_parameters_with_json(daemon):
    for path, word in [
        ("/library?limit=0", "limit"), ("/library?limit=501", "limit"), ("/library?limit=abc", "limit"),
        ("/library?before=-3", "before"), ("/library?colour=red", "colour"),
    ]:
        status, headers, body = daemon.json("GET", path)
        assert status == 400, path
        assert headers["content-type"] == "application/json"
        assert word in body["detail"], body
    for path in ["/library/0", "/library/abc", "/library/999999", "/media/999999.jpg", "/media/../x.jpg",
                 "/media/1.png", "/nothing"]:
        status, _, body = daemon.request("GET", path)
        assert status == 404, path
        assert "error" in json.loads(body)


def test_media_ranges_and_conditional_requests(daemon):
    record = daemon.snap()
    url = record["url"]
    _, headers, whole = daemon.request("GET", url)
    assert headers["accept-ranges"] == "bytes"
    assert "immutable" in headers["cache-control"]
    etag, modified = headers["etag"], headers["last-modified"]
    size = len(whole)

    status, headers, part = daemon.request("GET", url, headers={"Range": "bytes=0-99"})
    assert status == 206 and part == whole[:100]
    assert headers["content-range"] == f"bytes 0-99/{size}"
    status, _, part = daemon.request("GET", url, headers={"Range": "bytes=-10"})
    assert status == 206 and part == whole[-10:]
    status, _, part = daemon.request("GET", url, headers={"Range": f"bytes={size - 5}-"})
    assert status == 206 and part == whole[-5:]
    status, headers, body = daemon.request("GET", url, headers={"Range": f"bytes={size}-"})
    assert status == 416 and headers["content-range"] == f"bytes */{size}"
    assert json.loads(body)["error"]
    # A stale If-Range means "send it all".
    status, _, part = daemon.request("GET", url, headers={"Range": "bytes=0-9", "If-Range": '"0-0"'})
    assert status == 200 and part == whole

    status, headers, body = daemon.request("GET", url, headers={"If-None-Match": etag})
    assert status == 304 and body == b"" and headers["etag"] == etag
    status, _, body = daemon.request("GET", url, headers={"If-Modified-Since": modified})
    assert status == 304 and body == b""
    status, _, _ = daemon.request("GET", url, headers={"If-Match": '"nope"'})
    assert status == 412

    status, headers, body = daemon.request("HEAD", url)
    assert status == 200 and body == b"" and int(headers["content-length"]) == size


def test_delete_removes_record_and_file(daemon, tmp_path):
    keep, gone = daemon.snap(), daemon.snap()
    status, _, body = daemon.request("DELETE", f"/library/{gone['id']}")
    assert status == 204 and body == b""
    assert daemon.request("GET", f"/library/{gone['id']}")[0] == 404
    assert daemon.request("GET", gone["url"])[0] == 404
    assert daemon.request("DELETE", f"/library/{gone['id']}")[0] == 404
    assert not (tmp_path / "data" / "media" / f"{gone['id']}.jpg").exists()
    assert daemon.request("GET", keep["url"])[0] == 200
    # Ids are never reused, even for the newest.
    assert daemon.snap()["id"] > gone["id"]


def test_preview_status_and_health(daemon):
    status, headers, jpeg = daemon.request("GET", "/preview.jpg")
    assert status == 200 and headers["cache-control"] == "no-store"
    assert djpeg_size(jpeg) == (640, 480)
    daemon.snap()
    status, _, health = daemon.json("GET", "/healthz")
    assert status == 200 and health["status"] == "ok"
    status, _, info = daemon.json("GET", "/status")
    assert status == 200
    assert info["camera"]["name"] == "test-pattern"
    assert (info["camera"]["width"], info["camera"]["height"], info["camera"]["fps"]) == (640, 480, 60)
    assert info["camera"]["frames_captured"] > 0
    assert info["library"]["pictures"] == 1
    assert info["version"]
    assert info["uptime_s"] >= 0


def test_snap_rejects_bodies_and_parameters_it_does_not_take(daemon):
    status, _, body = daemon.json("POST", "/snap", body=b"not json", headers={"Content-Type": "application/json"})
    assert status == 400 and "body" in body["detail"]
    status, _, body = daemon.json("POST", "/snap?flash=on")
    assert status == 400 and "flash" in body["detail"]
    status, _, body = daemon.json("DELETE", "/library/1", body=b"{}")
    assert status in (400, 404)
    assert daemon.json("GET", "/library")[2]["items"] == []


def test_cameras_and_controls_on_the_test_pattern(daemon):
    status, _, listing = daemon.json("GET", "/cameras")
    assert status == 200 and listing["in_use"] == "test-pattern"
    assert isinstance(listing["cameras"], list)
    status, _, body = daemon.json("GET", "/camera/controls")
    assert status == 200 and body == {"controls": []}
    status, _, body = daemon.json("PATCH", "/camera/controls", body=b'{"brightness": 10}')
    assert status == 400 and "brightness" in body["detail"]
    for bad in [b"", b"[]", b"{}", b'{"brightness": "high"}', b'{"brightness": 1.5}']:
        status, _, body = daemon.json("PATCH", "/camera/controls", body=bad)
        assert status == 400, bad
        assert body["detail"]


def test_fresh_preview_waits_for_a_new_frame(make_daemon):
    d = make_daemon(["--size", "320x240", "--fps", "10"])
    _, first, _ = d.request("GET", "/preview.jpg")
    _, again, _ = d.request("GET", "/preview.jpg")
    # Within one frame interval the plain preview may answer with the same frame...
    _, fresh, _ = d.request("GET", "/preview.jpg?fresh=true")
    # ...but a fresh one is always a frame captured after the request.
    assert int(fresh["x-frame-sequence"]) > int(again["x-frame-sequence"])
    _, fresher, _ = d.request("GET", "/preview.jpg?fresh=1")
    assert int(fresher["x-frame-sequence"]) > int(fresh["x-frame-sequence"])
    assert d.request("GET", "/preview.jpg?fresh=maybe")[0] == 400


def test_index_lists_every_endpoint(daemon):
    status, _, body = daemon.json("GET", "/")
    assert status == 200 and body["service"] == "shutterd"
    for endpoint in ["POST /snap", "GET /library", "PATCH /library/{id}", "GET /media/{id}.jpg", "POST /jobs",
                     "PATCH /camera/controls", "GET /healthz"]:
        assert endpoint in body["endpoints"]


def test_snap_with_max_age_accepts_a_recent_frame(make_daemon):
    # At 2 fps the next frame is up to half a second away; a recent one answers at once.
    d = make_daemon(["--size", "320x240", "--fps", "2"])
    _, headers, _ = d.request("GET", "/preview.jpg?fresh=true")
    shown = headers["x-frame-time"]
    _, headers, record = d.json("POST", "/snap?max_age_ms=5000")
    assert record["taken_at"] == shown, "the frame already encoded, not a new one"
    # Nothing waited for or encoded by this request (the encode was the earlier one's).
    timing = dict(re.fullmatch(r"(\w+);dur=([\d.]+)", part.strip()).groups()
                  for part in headers["server-timing"].split(","))
    assert float(timing["wait"]) < 100 and float(timing["encode"]) == 0, headers["server-timing"]
    record = d.json("POST", "/snap", body=b'{"max_age_ms": 0}')[2]
    assert record["taken_at"] > shown, "max_age_ms=0 means a frame from now on"
    assert d.snap()["taken_at"] > record["taken_at"]
    for bad in ["/snap?max_age_ms=-1", "/snap?max_age_ms=soon", "/snap?max_age_ms=600000"]:
        status, _, body = d.json("POST", bad)
        assert status == 400 and "max_age_ms" in body["detail"]


def test_media_width_serves_a_cached_thumbnail_that_goes_with_its_picture(make_daemon, tmp_path):
    d = make_daemon(["--size", "1280x720", "--fps", "30"])
    record = d.snap()
    url = record["url"]
    _, _, original = d.request("GET", url)

    status, headers, thumb = d.request("GET", f"{url}?width=320")
    assert status == 200 and headers["content-type"] == "image/jpeg"
    assert "immutable" in headers["cache-control"]
    width, height = djpeg_size(thumb)
    # TurboJPEG's scaled decode: at least the width asked, under twice it, same aspect ratio.
    assert 320 <= width < 640
    assert abs(height - width * 720 / 1280) <= 1
    assert len(thumb) < len(original)
    etag = headers["etag"]
    assert etag == f'"{record["id"]}-{len(thumb)}-w320"'
    thumb_file = tmp_path / "data" / "media" / "thumbs" / f"{record['id']}-320.jpg"
    assert thumb_file.read_bytes() == thumb

    # The second request is the cached file: same bytes and validator, and conditional requests work.
    status, headers, again = d.request("GET", f"{url}?width=320")
    assert status == 200 and again == thumb and headers["etag"] == etag
    status, _, body = d.request("GET", f"{url}?width=320", headers={"If-None-Match": etag})
    assert status == 304 and body == b""
    status, _, part = d.request("GET", f"{url}?width=320", headers={"Range": "bytes=0-9"})
    assert status == 206 and part == thumb[:10]

    # As wide as the picture or wider (up to the 4096 limit): the original itself.
    for wide in (1280, 4096):
        status, headers, same = d.request("GET", f"{url}?width={wide}")
        assert status == 200 and same == original
        assert headers["etag"] == f'"{record["id"]}-{len(original)}"'

    for bad in ("abc", "0", "15", "4097", "5000", ""):
        status, _, body = d.request("GET", f"{url}?width={bad}")
        assert status == 400, bad
        assert "width" in json.loads(body)["detail"]
    assert d.request("GET", f"{url}?height=320")[0] == 400
    assert d.request("GET", "/media/999999.jpg?width=320")[0] == 404

    # Thumbnails are not pictures: the library still has exactly one.
    _, _, page = d.json("GET", "/library")
    assert [item["id"] for item in page["items"]] == [record["id"]]

    assert d.request("DELETE", f"/library/{record['id']}")[0] == 204
    assert not thumb_file.exists()
    assert d.request("GET", f"{url}?width=320")[0] == 404
    assert not thumb_file.exists()
