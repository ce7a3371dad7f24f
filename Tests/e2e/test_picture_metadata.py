"""What every stored picture says about itself: its label in the record and the library's filter,
and the EXIF block read back with exiftool (libimage-exiftool-perl), matching the record."""

import datetime
import hashlib
import io
import json
import subprocess
import time
import urllib.parse

from PIL import Image

from emucam import camera_daemon, emucam_env
from test_v4l2_camera import camera_frames, without_exif


def exif(jpeg: bytes) -> dict:
    """The tags exiftool reads from the JPEG, by name, values as written (-n)."""
    out = subprocess.run(["exiftool", "-j", "-n", "-G0", "-"], input=jpeg, capture_output=True, check=True)
    return {key.split(":", 1)[1]: value for key, value in json.loads(out.stdout)[0].items()
            if key.startswith("EXIF:")}


def taken_at(record) -> datetime.datetime:
    return datetime.datetime.strptime(record["taken_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc)


def assert_exif_matches(jpeg, record, offset, make, model, version):
    tags = exif(jpeg)
    local = taken_at(record) + offset
    sign = "-" if offset < datetime.timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    assert tags["DateTimeOriginal"] == local.strftime("%Y:%m:%d %H:%M:%S")
    assert str(tags["SubSecTimeOriginal"]).zfill(3) == f"{local.microsecond // 1000:03d}"
    assert tags["OffsetTimeOriginal"] == f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    assert tags["Make"] == make and tags["Model"] == model
    assert tags["Software"] == f"shutterd {version}"
    assert tags["Orientation"] == 1
    assert tags["ExifVersion"] == "0232"
    if record["label"] is None:
        assert "ImageDescription" not in tags
    else:
        assert tags["ImageDescription"] == record["label"]
    # Pillow reads the same block (IFD0 tags, then the Exif IFD by its pointer).
    with Image.open(io.BytesIO(jpeg)) as picture:
        ifd0 = picture.getexif()
        exif_ifd = ifd0.get_ifd(0x8769)
    assert ifd0[0x010F] == make and ifd0[0x0110] == model and ifd0[0x0112] == 1
    assert exif_ifd[0x9003] == tags["DateTimeOriginal"] and exif_ifd[0x9011] == tags["OffsetTimeOriginal"]
    assert ifd0.get(0x010E) == record["label"]


def test_a_snaps_label_is_stored_filtered_and_written_into_its_exif(make_daemon):
    # A POSIX TZ needs no tzdata: local time is UTC+05:30 (glibc, tzset(3)).
    d = make_daemon(env={"TZ": "IST-5:30"})
    version = d.json("GET", "/status")[2]["version"]
    status, _, labelled = d.json("POST", "/snap", body=json.dumps({"label": "front door"}))
    assert status == 201 and labelled["label"] == "front door"
    plain = d.snap()
    assert plain["label"] is None
    status, _, queried = d.json("POST", "/snap?label=" + urllib.parse.quote("back door & gate"))
    assert status == 201 and queried["label"] == "back door & gate"

    for record in (labelled, plain, queried):
        status, _, jpeg = d.request("GET", record["url"])
        assert status == 200
        # The record describes the file served, EXIF block included.
        assert len(jpeg) == record["bytes"] and hashlib.sha256(jpeg).hexdigest() == record["sha256"]
        assert_exif_matches(jpeg, record, datetime.timedelta(hours=5, minutes=30), "Shutter", "test-pattern",
                            version)

    _, _, page = d.json("GET", "/library?label=front%20door")
    assert [item["id"] for item in page["items"]] == [labelled["id"]]
    _, _, page = d.json("GET", "/library?label=" + urllib.parse.quote("back door & gate"))
    assert [item["id"] for item in page["items"]] == [queried["id"]]
    _, _, page = d.json("GET", "/library?label=nothing")
    assert page["items"] == []
    status, _, error = d.json("POST", "/snap", body=json.dumps({"label": "x" * 201}))
    assert status == 400 and "200 bytes" in error["detail"]


def test_a_jobs_label_goes_with_each_of_its_pictures(make_daemon):
    d = make_daemon()
    status, _, job = d.json("POST", "/jobs", body=json.dumps({"kind": "burst", "count": 3, "label": "porch"}))
    assert status == 201, job
    deadline = time.monotonic() + 20
    while d.json("GET", f"/jobs/{job['id']}")[2]["state"] != "done":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    _, _, page = d.json("GET", "/library?label=porch&limit=2")
    assert len(page["items"]) == 2 and page["next"] is not None
    _, _, rest = d.json("GET", page["next"])
    items = page["items"] + rest["items"]
    assert len(items) == 3 and all(item["job_id"] == job["id"] and item["label"] == "porch" for item in items)
    jpeg = d.request("GET", items[0]["url"])[2]
    assert exif(jpeg)["ImageDescription"] == "porch"


def test_mjpeg_keeps_the_cameras_bytes_after_the_exif_block_naming_driver_and_card(make_daemon, tmp_path):
    sent = camera_frames(tmp_path)
    d = camera_daemon(make_daemon)
    version = d.json("GET", "/status")[2]["version"]
    status, _, record = d.json("POST", "/snap", body=json.dumps({"label": "garage"}))
    assert status == 201
    jpeg = d.request("GET", record["url"])[2]
    assert without_exif(jpeg) in sent
    assert len(jpeg) == record["bytes"] and hashlib.sha256(jpeg).hexdigest() == record["sha256"]
    # The daemon inherits this process's time zone.
    offset = taken_at(record).astimezone().utcoffset()
    assert_exif_matches(jpeg, record, offset, "uvcvideo", "Emulated UVC Camera", version)
