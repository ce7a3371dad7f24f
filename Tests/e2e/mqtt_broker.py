"""A real Mosquitto broker for the MQTT tests: on a free 127.0.0.1 port, with a password file made
by mosquitto_passwd (anonymous clients refused), persistence on so a subscriber's session and
its queued messages survive a restart; and a paho-mqtt subscriber that records what it gets."""

import os
import pwd
import signal
import socket
import subprocess
import threading
import time

import paho.mqtt.client as mqtt

USER = "shutter"
PASSWORD = "s3cret-Pa55"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Broker:
    def __init__(self, directory, tls=None, own_session=False):
        """`tls`: (certificate, key) PEM files to serve MQTT over TLS with. `own_session`: run
        mosquitto in a session of its own, so a Ctrl-C at the terminal does not reach it."""
        self.own_session = own_session
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.port = free_port()
        self.password_file = os.path.join(self.directory, "passwords")
        subprocess.run(["mosquitto_passwd", "-c", "-b", self.password_file, USER, PASSWORD], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.chmod(self.password_file, 0o600)
        self.config = os.path.join(self.directory, "mosquitto.conf")
        with open(self.config, "w") as config:
            # Started as root (CI), mosquitto would switch to the `mosquitto` user, which cannot
            # read pytest's private temporary directory: stay whoever started it.
            config.write(f"user {pwd.getpwuid(os.getuid()).pw_name}\n"
                         f"listener {self.port} 127.0.0.1\n"
                         "allow_anonymous false\n"
                         f"password_file {self.password_file}\n"
                         "persistence true\n"
                         f"persistence_location {self.directory}/\n"
                         "log_dest stderr\n")
            if tls:
                config.write(f"certfile {tls[0]}\nkeyfile {tls[1]}\n")
        self.process = None
        self.log = open(os.path.join(self.directory, "broker.log"), "ab")

    def url(self, password=PASSWORD):
        return f"mqtt://{USER}:{password}@127.0.0.1:{self.port}"

    def start(self, timeout=10):
        self.process = subprocess.Popen(["mosquitto", "-c", self.config], stdout=self.log, stderr=self.log,
                                        start_new_session=self.own_session)
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                assert self.process.poll() is None, "mosquitto exited: see " + self.log.name
                assert time.monotonic() < deadline, "mosquitto did not listen"
                time.sleep(0.05)

    def stop(self):
        """SIGTERM: the broker saves its persistent sessions and exits."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(10)


class Subscriber:
    """A persistent-session paho client subscribed to `topics` with QoS 1; reconnects by itself."""

    def __init__(self, broker, topics=("#",), client_id="e2e-subscriber"):
        self.messages = []
        self.lock = threading.Lock()
        self.topics = topics
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False)
        self.client.username_pw_set(USER, PASSWORD)
        self.client.reconnect_delay_set(min_delay=1, max_delay=1)
        self.client.on_connect = self._connected
        self.client.on_message = self._received
        self.connected = threading.Event()
        self.client.connect("127.0.0.1", broker.port, keepalive=30)
        self.client.loop_start()
        assert self.connected.wait(10), "the subscriber did not connect"

    def _connected(self, client, userdata, flags, reason_code, properties):
        if reason_code == 0:
            for topic in self.topics:
                client.subscribe(topic, qos=1)
            self.connected.set()

    def _received(self, client, userdata, message):
        with self.lock:
            self.messages.append((message.topic, bytes(message.payload), bool(message.retain)))

    def on(self, topic):
        with self.lock:
            return [payload for t, payload, _ in self.messages if t == topic]

    def wait_for(self, predicate, timeout=20, what="a message"):
        """Waits until predicate(self) is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate(self)
            if value:
                return value
            if time.monotonic() > deadline:
                with self.lock:
                    seen = [(t, p[:200]) for t, p, _ in self.messages]
                raise AssertionError(f"no {what} within {timeout} s; got {seen}")
            time.sleep(0.05)

    def publish(self, topic, payload):
        info = self.client.publish(topic, payload, qos=1)
        info.wait_for_publish(10)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()
