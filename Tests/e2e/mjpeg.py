"""A strict `multipart/x-mixed-replace` MJPEG client over a raw socket, for the stream tests."""

import re
import socket
import time


class MJPEGStream:
    """Reads `GET path` as an MJPEG stream, part by part, checking the framing as it goes."""

    def __init__(self, port, path="/preview.mjpg", receive_buffer=None, timeout=10, ssl_context=None):
        self.sock = socket.socket()
        if receive_buffer:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        if ssl_context:
            # HTTPS: the same framing checks, read through TLS.
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname="127.0.0.1")
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        self.buffer = bytearray()
        head = self._read_until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {}
        for line in lines[1:]:
            if line:
                name, value = line.split(":", 1)
                self.headers[name.strip().lower()] = value.strip()
        self.boundary = None
        match = re.search(r"boundary=\"?([^\";]+)", self.headers.get("content-type", ""))
        if match:
            self.boundary = match.group(1).encode()

    def close(self):
        self.sock.close()

    def _fill(self):
        chunk = self.sock.recv(262144)
        if not chunk:
            raise EOFError("the server closed the stream")
        self.buffer += chunk

    def _read_until(self, marker):
        while True:
            index = self.buffer.find(marker)
            if index >= 0:
                data = bytes(self.buffer[:index])
                del self.buffer[:index + len(marker)]
                return data
            self._fill()

    def _read_exactly(self, count):
        while len(self.buffer) < count:
            self._fill()
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def read_preamble(self):
        """The first boundary line, sent before the first part."""
        line = self._read_until(b"\r\n")
        assert line == b"--" + self.boundary, line

    def next_part(self):
        """One part: (headers dict, body bytes, time its last byte arrived, time its closing
        boundary arrived). The boundary after a part must follow it at once, not with the next
        part (browsers show a part only once they see the next boundary)."""
        head = self._read_until(b"\r\n\r\n").decode("latin-1")
        headers = {}
        for line in head.split("\r\n"):
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
        body = self._read_exactly(int(headers["content-length"]))
        body_at = time.monotonic()
        closing = self._read_exactly(len(self.boundary) + 6)
        assert closing == b"\r\n--" + self.boundary + b"\r\n", closing
        return headers, body, body_at, time.monotonic()
