"""GET /library's since, until and keep filters against the real daemon: what they keep, how
they page, their ETag, and the 400 every bad value gets."""

import datetime
import json
import urllib.parse


def parse_time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)


def rfc3339(moment, offset_hours=0):
    zone = datetime.timezone(datetime.timedelta(hours=offset_hours))
    return moment.astimezone(zone).isoformat(timespec="milliseconds")


def listing(d, **query):
    status, headers, body = d.json("GET", "/library?" + urllib.parse.urlencode(query))
    assert status == 200, body
    return headers, body


def follow(d, **query):
    """Every id of a filtered listing, page by page along its next links."""
    _, page = listing(d, **query)
    ids = [item["id"] for item in page["items"]]
    while page["next"]:
        status, _, page = d.json("GET", page["next"])
        assert status == 200, page
        ids += [item["id"] for item in page["items"]]
    return ids


def test_since_until_and_keep_filter_combine_and_page(daemon):
    d = daemon
    records = [d.snap() for _ in range(6)]
    for record in records[1:4]:
        assert d.json("PATCH", f"/library/{record['id']}", json.dumps({"keep": True}))[0] == 200
    times = [parse_time(r["taken_at"]) for r in records]
    ids = [r["id"] for r in records]

    # since is inclusive and until exclusive, to the millisecond, whatever the offset is written in.
    since, until = times[1], times[4]
    _, page = listing(d, since=rfc3339(since, 2), until=rfc3339(until, -5))
    expected = [r["id"] for r, t in zip(records, times) if since <= t < until]
    assert [item["id"] for item in page["items"]] == sorted(expected, reverse=True)
    assert ids[1] in expected and ids[4] not in expected

    assert [i["id"] for i in listing(d, keep="true")[1]["items"]] == ids[3:0:-1]
    assert [i["id"] for i in listing(d, keep="false")[1]["items"]] == [ids[5], ids[4], ids[0]]
    # Together, one a page, following next: the links keep every filter.
    assert follow(d, keep="true", since=rfc3339(times[2]), limit=1) == [ids[3], ids[2]]
    assert follow(d, keep="false", until=rfc3339(times[5]), after=0, limit=1) == [ids[0], ids[4]]
    assert follow(d, since=rfc3339(times[0]), before=ids[3], limit=2) == [ids[2], ids[1], ids[0]]
    # An empty range is an empty page, not an error.
    _, empty = listing(d, since="2999-01-01T00:00:00Z")
    assert empty == {"items": [], "next": None}


def test_a_filtered_listing_is_revalidated_by_its_etag(daemon):
    d = daemon
    record = d.snap()
    query = "/library?keep=true&since=2000-01-01T00:00:00Z"
    status, headers, body = d.json("GET", query)
    assert status == 200 and body["items"] == []
    etag = headers["etag"]
    assert d.request("GET", query, headers={"If-None-Match": etag})[0] == 304
    # Marking keep changes this listing, so its ETag must change.
    assert d.json("PATCH", f"/library/{record['id']}", json.dumps({"keep": True}))[0] == 200
    status, headers, body = d.json("GET", query, headers={"If-None-Match": etag})
    assert status == 200 and [item["id"] for item in body["items"]] == [record["id"]]
    assert headers["etag"] != etag


def test_bad_filter_values_are_400s_naming_the_parameter(daemon):
    d = daemon
    for query, name in [
        ("since=yesterday", "since"),
        ("until=2026-12-02", "until"),
        ("since=2026-12-02T10:00:00", "since"),
        ("since=2026-02-30T10:00:00Z", "since"),
        ("keep=yes", "keep"),
        ("keep=", "keep"),
        ("since=2026-12-02T11:00:00Z&until=2026-12-02T10:00:00Z", "until"),
        ("keep=true&keep=false", "keep"),
        ("since=" + "9" * 3000, "since"),
    ]:
        status, headers, body = d.json("GET", "/library?" + query)
        assert status == 400, (query, body)
        assert headers["content-type"] == "application/json"
        assert set(body) == {"error", "detail"} and name in body["detail"], (query, body)
