"""A webhook endpoint for the tests and benchmarks: http.server on a free 127.0.0.1 port, in a
thread, recording every POST. What it answers is decided by `respond`, which a test passes or a
subclass overrides (hold the first POST, refuse every third, hang...); the bodies are read before
it is called, so a slow answer is slow after the daemon has sent everything.

    receiver = WebhookReceiver()                    # 204 to everything
    receiver = WebhookReceiver(respond=lambda post: 503 if post.number <= 2 else 204)
    daemon = ... "--webhook-url", receiver.url ...
    receiver.wait_for(2)                            # the first two POSTs answered 2xx
    receiver.close()
"""

import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Post:
    """One POST as it arrived: its number (1 for the first), when (time.monotonic()), its
    headers with lower-case names, its body, and what `tag()` returned when it arrived."""

    number: int
    arrived: float
    headers: dict
    body: bytes
    tag: object = None
    status: int = field(default=0)  # what it was answered, once answered


class WebhookReceiver:
    def __init__(self, respond=None, tag=None, tls=None):
        """`respond(post)` returns the status to answer (default 204) and may sleep first;
        `tag()` is called as each POST arrives, before its body is read, and kept with it (the
        fault rounds record which of the daemon's lives sent it); `tls` is (certificate, key)."""
        self.lock = threading.Lock()
        self.posts = []  # every Post, in the order they arrived
        self.accepted = []  # the Posts answered 2xx, in the order answered
        self.first_post = threading.Event()
        self._respond = respond or self.respond
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                label = tag() if tag else None
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                with receiver.lock:
                    post = Post(len(receiver.posts) + 1, time.monotonic(), headers, body, label)
                    receiver.posts.append(post)
                receiver.first_post.set()
                status = receiver._respond(post)
                with receiver.lock:
                    post.status = status
                    if 200 <= status < 300:
                        receiver.accepted.append(post)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def respond(self, post):
        return 204

    def all_posts(self):
        with self.lock:
            return list(self.posts)

    def accepted_posts(self):
        with self.lock:
            return list(self.accepted)

    def wait_for(self, count, timeout=20):
        """The accepted Posts once there are at least `count`; fails after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            accepted = self.accepted_posts()
            if len(accepted) >= count:
                return accepted
            assert time.monotonic() < deadline, (
                f"{len(accepted)} of {count} accepted: "
                f"{[(p.number, p.status, p.body[:200]) for p in self.all_posts()]}")
            time.sleep(0.02)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
