"""Configuration from flags, SHUTTERD_* environment variables and the JSON file, in that precedence."""

import json
import os
import subprocess

from conftest import BINARY


def test_help_lists_every_key():
    out = subprocess.run([BINARY, "--help"], capture_output=True, text=True, check=True).stdout
    for flag in ("--listen", "--data-dir", "--camera", "--size", "--fps", "--quality", "--config", "--log-level",
                 "SHUTTERD_LISTEN", "default 127.0.0.1:8080"):
        assert flag in out


def test_precedence_flags_over_env_over_file(make_daemon, tmp_path):
    config = tmp_path / "shutterd.json"
    config.write_text(json.dumps({"_comment": "test", "size": "320x240", "fps": 10, "quality": 50}))
    d = make_daemon(["--config", str(config), "--fps", "25"], env={"SHUTTERD_FPS": "15", "SHUTTERD_SIZE": "640x480"})
    _, _, status = d.json("GET", "/status")
    assert (status["camera"]["width"], status["camera"]["height"]) == (640, 480)  # env over file
    assert status["camera"]["fps"] == 25  # flag over env


def test_shipped_example_config_is_valid(make_daemon):
    example = os.path.join(os.path.dirname(__file__), "../../config/shutterd.json")
    d = make_daemon(["--config", example])
    assert d.request("GET", "/healthz")[0] == 200


def test_bad_configuration_exits_2_and_says_why(tmp_path):
    cases = [
        (["--fps", "0"], "fps"),
        (["--size", "12x"], "size"),
        (["--listen", "nowhere"], "listen"),
        (["--bogus", "1"], "--bogus"),
    ]
    for args, word in cases:
        out = subprocess.run([BINARY, "--data-dir", str(tmp_path), *args], capture_output=True, text=True, timeout=10)
        assert out.returncode == 2, args
        assert word in out.stderr, out.stderr
    config = tmp_path / "bad.json"
    config.write_text('{"colour": "red"}')
    out = subprocess.run([BINARY, "--config", str(config)], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and "colour" in out.stderr
