"""One GET /events on a raw socket, parsed as server-sent events: shared by Tests/e2e/test_events.py
and benchmarks/soak.py, so the soak reads the change feed exactly as the tests do."""

import json
import socket


class EventStream:
    """One GET /events on a raw socket, parsed as the WHATWG event-stream format."""

    def __init__(self, port, path="/events", headers=None, rcvbuf=None, timeout=10, tls=None):
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        if tls:
            self.sock = tls.wrap_socket(self.sock, server_hostname="127.0.0.1")
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n".encode())
        self.buffer = b""
        self.raw = b""

    def head(self):
        """The status and headers (lowercase names)."""
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.raw = self.buffer
        return int(lines[0].split()[1]), headers

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("the server closed the stream")
        self.buffer += chunk
        self.raw += chunk

    def next_block(self):
        """The next block up to a blank line, as its lines."""
        while b"\n\n" not in self.buffer:
            self._fill()
        block, self.buffer = self.buffer.split(b"\n\n", 1)
        return block.decode().split("\n")

    def next_event(self, keep_comments=False):
        """The next event as a dict (id, event, data parsed as JSON); comments and the retry hint are
        skipped unless `keep_comments`, then returned as {"comment": text}."""
        while True:
            fields = {}
            for line in self.next_block():
                if line.startswith(":"):
                    if keep_comments:
                        return {"comment": line[1:].strip()}
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                fields[name] = fields[name] + "\n" + value if name in fields else value
            if "data" in fields:
                return {"id": int(fields["id"]), "event": fields["event"], "data": json.loads(fields["data"])}

    def events(self, count):
        return [self.next_event() for _ in range(count)]

    def close(self):
        self.sock.close()
