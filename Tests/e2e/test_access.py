"""Access control and the browser defences over the real binary: tokens and scopes (Bearer and
Basic), anonymous access, signed links, the refusal to serve a non-loopback address to everyone,
Host and Origin checks, CORS, and the failed-login throttle."""

import base64
import json
import os
import socket
import subprocess
import time

import pytest

from conftest import BINARY

VIEW = "view-token-0123456789abcdef"
SNAP = "snap-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"
TOKENS = {"view": VIEW, "snap": SNAP, "admin": ADMIN}
ORDER = ["none", "view", "snap", "admin"]


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"# scopes\nview {VIEW}\nsnap {SNAP}\n\nadmin {ADMIN}\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def protected(make_daemon, token_file):
    """A daemon listening on every address (a non-loopback listener), with tokens."""
    return make_daemon(["--listen", "0.0.0.0:0", "--auth-tokens", str(token_file), "--size", "320x240", "--fps", "30"])


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def basic(token, user="anyone"):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()}


def credentials(scope, use_basic):
    if scope == "none":
        return {}
    return basic(TOKENS[scope]) if use_basic else bearer(TOKENS[scope])


def test_every_route_needs_its_scope_with_bearer_and_basic(protected):
    d = protected
    status, _, record = d.json("POST", "/snap", headers=bearer(SNAP))
    assert status == 201, record
    picture = record["id"]
    # (method, path, body, scope needed)
    routes = [
        ("GET", "/healthz", None, "none"),
        ("GET", "/", None, "view"),
        ("GET", "/status", None, "view"),
        ("GET", "/openapi.json", None, "view"),
        ("GET", "/cameras", None, "view"),
        ("GET", "/camera/controls", None, "view"),
        ("GET", "/library", None, "view"),
        ("GET", f"/library/{picture}", None, "view"),
        ("GET", f"/media/{picture}.jpg", None, "view"),
        ("GET", f"/media/{picture}.jpg?width=64", None, "view"),
        ("GET", "/preview.jpg", None, "view"),
        ("HEAD", "/preview.mjpg", None, "view"),
        ("HEAD", "/events", None, "view"),
        ("GET", "/jobs", None, "view"),
        ("GET", "/jobs/999", None, "view"),
        ("GET", "/nowhere", None, "view"),
        ("POST", "/snap", None, "snap"),
        ("POST", "/jobs", json.dumps({"kind": "delayed", "delay": 3600}), "snap"),
        ("PATCH", f"/library/{picture}", json.dumps({"keep": True}), "admin"),
        ("PATCH", "/camera/controls", json.dumps({}), "admin"),
        ("DELETE", "/jobs/999", None, "admin"),
        ("DELETE", "/library/999", None, "admin"),
        ("POST", "/links", json.dumps({"path": f"/media/{picture}.jpg"}), "admin"),
    ]
    for method, path, body, needed in routes:
        for index, scope in enumerate(ORDER):
            use_basic = index % 2 == 1
            status, headers, data = d.request(method, path, body=body, headers=credentials(scope, use_basic))
            allowed = ORDER.index(scope) >= ORDER.index(needed)
            where = f"{method} {path} as {scope} ({'Basic' if use_basic else 'Bearer'}): {status} {data[:200]!r}"
            if allowed:
                assert status not in (401, 403), where
            elif scope == "none":
                assert status == 401, where
                assert headers["content-type"] == "application/json", where
                assert "Basic realm=" in headers["www-authenticate"], where
            else:
                assert status == 403, where
                assert f"needs the {needed} scope".encode() in data, where
    # Wrong credentials are a 401 whatever the route, and the token never reaches the log.
    status, _, _ = d.request("GET", "/library",
                             headers={**bearer("not-a-real-token-0123456789"), "X-Request-Id": "wrong-token"})
    assert status == 401
    d.wait_for_log("authentication failed", "peer=127.0.0.1")
    d.wait_for_log(" request ", "request_id=wrong-token", "status=401")
    assert not any("not-a-real-token" in line for line in d.log_lines)


def test_curl_one_liners_work_with_tokens(protected):
    url = f"http://127.0.0.1:{protected.port}"
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-u", f":{SNAP}",
                          f"{url}/snap"], capture_output=True, text=True, timeout=20).stdout
    assert out == "201"
    out = subprocess.run(["curl", "-s", "-H", f"Authorization: Bearer {VIEW}", f"{url}/library"],
                         capture_output=True, text=True, timeout=20).stdout
    assert len(json.loads(out)["items"]) == 1
    # A script posting with any Content-Type (curl sends no Origin) is not taken for a browser.
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-u", f":{SNAP}",
                          "-H", "Content-Type: text/plain", "--data", "{}", f"{url}/snap"],
                         capture_output=True, text=True, timeout=20).stdout
    assert out == "201"


def test_a_non_loopback_listener_without_tokens_refuses_to_start(tmp_path):
    result = subprocess.run([BINARY, "--listen", "0.0.0.0:0", "--data-dir", str(tmp_path / "d")],
                            capture_output=True, text=True, timeout=20)
    assert result.returncode != 0
    assert "--auth-tokens" in result.stderr and "--insecure-no-auth" in result.stderr
    assert not (tmp_path / "d" / "catalog.sqlite").exists()


def test_insecure_no_auth_serves_everyone_and_warns_at_every_start(make_daemon, tmp_path):
    for _ in range(2):
        d = make_daemon(["--listen", "0.0.0.0:0", "--insecure-no-auth", "--size", "320x240"], data_dir=tmp_path / "d")
        assert d.json("POST", "/snap")[0] == 201
        d.wait_for_log("without access tokens", "warning")
        d.stop()


def test_loopback_with_tokens_is_closed_to_anonymous_unless_told(make_daemon, token_file, tmp_path):
    closed = make_daemon(["--auth-tokens", str(token_file)], data_dir=tmp_path / "a")
    assert closed.request("GET", "/library")[0] == 401
    assert closed.request("GET", "/healthz")[0] == 200
    viewable = make_daemon(["--auth-tokens", str(token_file), "--anonymous", "view"], data_dir=tmp_path / "b")
    assert viewable.request("GET", "/library")[0] == 200
    assert viewable.request("POST", "/snap")[0] == 401
    assert viewable.request("POST", "/snap", headers=bearer(SNAP))[0] == 201


def test_tokens_from_systemd_credentials(make_daemon, tmp_path):
    credentials_dir = tmp_path / "credentials"
    credentials_dir.mkdir()
    (credentials_dir / "auth-tokens").write_text(f"admin {ADMIN}\n")
    d = make_daemon(["--listen", "0.0.0.0:0"], env={"CREDENTIALS_DIRECTORY": str(credentials_dir)})
    assert d.request("GET", "/library")[0] == 401
    assert d.request("GET", "/library", headers=bearer(ADMIN))[0] == 200


def test_bad_token_files_are_refused_with_the_line(tmp_path):
    for text, words in [("view short\n", "at least 16"), ("root aaaaaaaaaaaaaaaaaaaa\n", "unknown scope"),
                        ("# nothing\n", "no tokens")]:
        path = tmp_path / "tokens"
        path.write_text(text)
        result = subprocess.run([BINARY, "--auth-tokens", str(path), "--data-dir", str(tmp_path / "d")],
                                capture_output=True, text=True, timeout=20)
        assert result.returncode != 0 and words in result.stderr, result.stderr


def read_first_part(port, path):
    """The first JPEG of a multipart stream at `path`, read from a raw socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = b""
        while b"\xff\xd9" not in data.split(b"\r\n\r\n", 2)[-1] or data.count(b"\r\n\r\n") < 2:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def test_signed_links_grant_view_for_one_path_until_they_expire(protected):
    d = protected
    status, _, record = d.json("POST", "/snap", headers=bearer(ADMIN))
    picture = record["id"]
    status, _, link = d.json("POST", "/links", body=json.dumps({"path": f"/media/{picture}.jpg", "expires_in": 600}),
                             headers=bearer(ADMIN))
    assert status == 201, link
    url = link["url"]
    assert url.startswith(f"/media/{picture}.jpg?exp=")
    status, headers, body = d.request("GET", url)
    assert status == 200 and headers["content-type"] == "image/jpeg"
    status, _, original = d.request("GET", f"/media/{picture}.jpg", headers=bearer(VIEW))
    assert body == original
    # Thumbnails of the same picture ride on the same link.
    assert d.request("GET", url + "&width=64")[0] == 200
    # Another path, a longer life, another signature: refused; and no more than view.
    assert d.request("GET", url.replace(f"/media/{picture}.jpg", "/media/999999.jpg"))[0] == 403
    exp = url.split("exp=")[1].split("&")[0]
    assert d.request("GET", url.replace(f"exp={exp}", f"exp={int(exp) + 1000}"))[0] == 403
    assert d.request("GET", url[:-3] + ("AAA" if not url.endswith("AAA") else "BBB"))[0] == 403
    # A link is for reading: a delete on its path is still not a route (nothing learnt, nothing lost).
    assert d.request("DELETE", url)[0] == 405
    # Where no link can be made, exp and sig are ordinary (here unknown) parameters.
    assert d.request("GET", "/library?exp=1", headers=bearer(VIEW))[0] == 400
    assert d.request("DELETE", f"/library/{picture}?" + url.split("?")[1])[0] == 401
    assert d.request("GET", f"/library/{picture}", headers={**bearer(VIEW), "X-Request-Id": "after-links"})[0] == 200
    # The signature is a credential: it is not written to the access log. Access lines arrive in
    # batches, in order: once this request's is here, every link request's is.
    d.wait_for_log(" request ", "request_id=after-links")
    sig = url.split("sig=")[1]
    assert not any(sig in line for line in d.log_lines)
    # A link to the live preview streams it.
    status, _, preview = d.json("POST", "/links", body=json.dumps({"path": "/preview.mjpg"}), headers=bearer(ADMIN))
    data = read_first_part(d.port, preview["url"])
    assert data.startswith(b"HTTP/1.1 200 OK") and b"Content-Type: image/jpeg" in data
    # Expiry.
    status, _, short = d.json("POST", "/links", body=json.dumps({"path": f"/media/{picture}.jpg", "expires_in": 1}),
                              headers=bearer(ADMIN))
    assert d.request("GET", short["url"])[0] == 200
    time.sleep(2.1)
    status, _, body = d.request("GET", short["url"])
    assert status == 403 and b"expired" in body


def test_a_preview_link_stream_ends_when_the_link_expires(protected):
    """A link grants the live preview until it expires: a stream opened with it ends then,
    instead of serving frames for as long as the viewer stays."""
    d = protected
    status, _, link = d.json("POST", "/links", body=json.dumps({"path": "/preview.mjpg", "expires_in": 2}),
                             headers=bearer(ADMIN))
    assert status == 201, link
    with socket.create_connection(("127.0.0.1", d.port), timeout=10) as sock:
        sock.sendall(f"GET {link['url']} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        started = time.monotonic()
        data = b""
        while time.monotonic() - started < 8:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        ended_after = time.monotonic() - started
    assert data.startswith(b"HTTP/1.1 200 OK") and b"Content-Type: image/jpeg" in data
    # The link's expiry is whole seconds, at most 2 s away, and frames come at 30 fps.
    assert ended_after < 4, f"the stream outlived its link by {ended_after - 2:.1f} s"


def test_links_survive_a_restart_and_the_key_is_private(make_daemon, token_file, tmp_path):
    data_dir = tmp_path / "d"
    d = make_daemon(["--auth-tokens", str(token_file)], data_dir=data_dir)
    picture = d.json("POST", "/snap", headers=bearer(ADMIN))[2]["id"]
    url = d.json("POST", "/links", body=json.dumps({"path": f"/media/{picture}.jpg"}), headers=bearer(ADMIN))[2]["url"]
    d.stop()
    assert os.stat(data_dir / "link-signing.key").st_mode & 0o777 == 0o600
    again = make_daemon(["--auth-tokens", str(token_file)], data_dir=data_dir)
    assert again.request("GET", url)[0] == 200


def test_host_must_name_this_daemon(make_daemon):
    d = make_daemon(["--allowed-hosts", "camera.example.org"])
    for host in [f"127.0.0.1:{d.port}", f"localhost:{d.port}", "camera.example.org", f"[::1]:{d.port}"]:
        assert d.request("GET", "/library", headers={"Host": host})[0] == 200, host
    for host in ["evil.example", f"evil.example:{d.port}", "camera.example.org.evil.example"]:
        status, headers, body = d.request("GET", "/library", headers={"Host": host})
        assert status == 421, host
        assert json.loads(body)["error"] == "unknown host"
    # Also for requests that change state: a rebinding page cannot snap either.
    assert d.request("POST", "/snap", headers={"Host": "evil.example"})[0] == 421
    # An absolute-form target names the host itself (RFC 9112 §3.2.2), whatever Host says.
    answer = d.raw(b"GET http://evil.example/library HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 421 "), answer[:100]
    answer = d.raw(b"GET http://localhost/library HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:100]


def test_cross_site_requests_cannot_change_state_even_on_loopback(daemon):
    d = daemon
    own = f"http://127.0.0.1:{d.port}"
    # The daemon's own page may; a script with any Content-Type may.
    assert d.request("POST", "/snap", headers={"Origin": own})[0] == 201
    assert d.request("POST", "/snap", body="{}", headers={"Content-Type": "text/plain"})[0] == 201
    for headers in [{"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
                    {"Origin": "http://evil.example", "Content-Type": "text/plain"}]:
        status, _, body = d.request("POST", "/jobs", body=json.dumps({"kind": "delayed", "delay": 5}), headers=headers)
        assert status == 403, headers
        assert json.loads(body)["error"] == "cross-site request refused"
    assert d.json("GET", "/jobs")[2]["items"] == []
    # Reading stays possible for anyone the scope allows (an <img> on another page).
    assert d.request("GET", "/preview.jpg", headers={"Origin": "http://evil.example"})[0] == 200


def test_cors_only_for_listed_origins(make_daemon):
    d = make_daemon(["--cors-origins", "https://dash.example.org"])
    preflight = {"Origin": "https://dash.example.org", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"}
    status, headers, _ = d.request("OPTIONS", "/snap", headers=preflight)
    assert status == 204
    assert headers["access-control-allow-origin"] == "https://dash.example.org"
    assert "POST" in headers["access-control-allow-methods"]
    assert "Authorization" in headers["access-control-allow-headers"]
    status, headers, _ = d.request("OPTIONS", "/snap", headers={**preflight, "Origin": "https://evil.example"})
    assert status == 403 and "access-control-allow-origin" not in headers
    status, headers, _ = d.request("POST", "/snap", headers={"Origin": "https://dash.example.org"})
    assert status == 201 and headers["access-control-allow-origin"] == "https://dash.example.org"
    status, headers, _ = d.request("GET", "/library", headers={"Origin": "https://evil.example"})
    assert status == 200 and "access-control-allow-origin" not in headers


def test_nosniff_on_every_answer(daemon):
    picture = daemon.snap()["id"]
    for method, path in [("GET", "/"), ("GET", "/library"), ("GET", f"/media/{picture}.jpg"), ("GET", "/nowhere"),
                         ("POST", "/library")]:
        assert daemon.request(method, path)[1]["x-content-type-options"] == "nosniff", path
    assert b"X-Content-Type-Options: nosniff" in daemon.raw(b"BROKEN\r\n\r\n")


def test_failed_logins_are_throttled_per_client(protected):
    d = protected
    for _ in range(10):
        assert d.request("GET", "/library", headers=bearer("wrong-token-000000000000"))[0] == 401
    status, headers, body = d.request("GET", "/library", headers=bearer(VIEW))
    assert status == 429 and int(headers["retry-after"]) > 0
    assert b"too many failed attempts" in body
    # Anonymous requests are not counted and are not throttled: health checks go on.
    assert d.request("GET", "/healthz")[0] == 200


def test_a_failed_login_cannot_write_a_log_line_of_its_own(protected):
    """The failed-login warning names the decoded path: a percent-encoded newline in it stays
    inside the warning's line instead of starting a forged one."""
    d = protected
    forged = "2026-12-02T00:00:00.000Z error shutterd: forged"
    target = "/media%0A" + forged.replace(" ", "%20") + ".jpg"
    assert d.request("GET", target, headers=bearer("wrong-token-000000000000"))[0] == 401
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any("authentication failed" in line for line in d.log_lines):
        time.sleep(0.05)
    warning = [line for line in d.log_lines if "authentication failed" in line]
    assert warning and "\\n" + forged in warning[0], d.log_lines
    assert not any(line.startswith(forged) for line in d.log_lines)


def test_a_refused_request_is_answered_before_its_body(protected):
    """Without credentials, a POST is refused from its head: the daemon neither asks for nor
    buffers the megabyte it announces, so a client cannot hold memory on every connection."""
    d = protected
    with socket.create_connection(("127.0.0.1", d.port), timeout=5) as sock:
        sock.sendall(b"POST /snap HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n"
                     b"Expect: 100-continue\r\n\r\n")
        started = time.monotonic()
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 401 Unauthorized\r\n"), data[:100]
    assert b"Connection: close\r\n" in data
    assert time.monotonic() - started < 2
