"""Drives Debian's headless Firefox (firefox-esr) through Marionette, its built-in remote protocol.

Selenium needs geckodriver for Firefox, which Debian does not package and nothing here can
download; Marionette is the protocol geckodriver itself speaks to Firefox: length-prefixed JSON
over TCP, `[0, id, command, parameters]` answered by `[1, id, error, result]`.
"""

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"

# A quiet profile: no first-run pages, updates, telemetry or outside connections.
PREFERENCES = {
    "marionette.port": 0,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "extensions.update.enabled": False,
    "browser.aboutwelcome.enabled": False,
}


class MarionetteError(Exception):
    pass


class Firefox:
    """One headless Firefox with a fresh profile; `with Firefox(port) as ff: ff.navigate(url)`."""

    def __init__(self, port, width=1024, height=768):
        self.port = port
        self.profile = tempfile.mkdtemp(prefix="shutter-firefox-")
        preferences = dict(PREFERENCES, **{"marionette.port": port})
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            for name, value in preferences.items():
                f.write(f"user_pref({json.dumps(name)}, {json.dumps(value)});\n")
        env = dict(os.environ, MOZ_HEADLESS="1", MOZ_HEADLESS_WIDTH=str(width),
                   MOZ_HEADLESS_HEIGHT=str(height))
        self.process = subprocess.Popen(
            [FIREFOX, "--headless", "--marionette", "--no-remote", "--profile", self.profile],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        self.sock = self._connect()
        self.buffer = b""
        self.next_id = 1
        hello = self._receive()
        if hello.get("marionetteProtocol") != 3:
            raise MarionetteError(f"unexpected greeting {hello}")
        self.command("WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": True}}})

    def _connect(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise MarionetteError(f"firefox exited with {self.process.returncode}")
            try:
                return socket.create_connection(("127.0.0.1", self.port), timeout=30)
            except OSError:
                time.sleep(0.2)
        raise MarionetteError("firefox did not open its Marionette port")

    def _receive(self):
        while b":" not in self.buffer:
            self._fill()
        length, _, rest = self.buffer.partition(b":")
        length = int(length)
        self.buffer = rest
        while len(self.buffer) < length:
            self._fill()
        message, self.buffer = self.buffer[:length], self.buffer[length:]
        return json.loads(message)

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise MarionetteError("firefox closed the Marionette connection")
        self.buffer += chunk

    def command(self, name, parameters=None):
        message_id = self.next_id
        self.next_id += 1
        data = json.dumps([0, message_id, name, parameters or {}]).encode()
        self.sock.sendall(str(len(data)).encode() + b":" + data)
        while True:
            reply = self._receive()
            if reply[0] == 1 and reply[1] == message_id:
                break
        if reply[2]:
            raise MarionetteError(f"{name}: {reply[2]}")
        return reply[3]

    def navigate(self, url):
        # A multipart image never finishes loading: do not wait for the load event.
        self.command("WebDriver:SetTimeouts", {"pageLoad": 5000})
        try:
            self.command("WebDriver:Navigate", {"url": url, "pageLoadStrategy": "none"})
        except MarionetteError as error:
            if "Timeout" not in str(error):
                raise

    def execute(self, script, args=()):
        return self.command("WebDriver:ExecuteScript", {"script": script, "args": list(args)})["value"]

    def find(self, css):
        return self.command("WebDriver:FindElement", {"using": "css selector", "value": css})["value"][ELEMENT]

    def screenshot(self, element=None):
        """PNG bytes of the viewport, or of one element."""
        parameters = {"full": False, "hash": False}
        if element:
            parameters["id"] = element
        return base64.b64decode(self.command("WebDriver:TakeScreenshot", parameters)["value"])

    def close(self):
        try:
            self.command("Marionette:Quit", {"flags": ["eForceQuit"]})
        except (MarionetteError, OSError):
            pass
        try:
            self.process.wait(3)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.sock.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
