"""scripts/install: a staged install (the binary with the Swift runtime linked statically, the
unit, the config, the man page), its removal, and the Debian package installed with dpkg and run."""

import os
import re
import shutil
import subprocess

import pytest

from conftest import Daemon

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
INSTALL = os.path.join(REPOSITORY, "scripts", "install")


def run(*args, **kwargs):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=900, **kwargs)


def test_a_staged_install_and_its_removal(tmp_path):
    root = tmp_path / "root"
    result = run(INSTALL, "--root", str(root))
    assert result.returncode == 0, result.stderr[-3000:]
    binary = root / "usr/local/bin/shutterd"
    assert os.stat(binary).st_mode & 0o777 == 0o755
    # Only Debian's C libraries: no Swift runtime to install beside it.
    libraries = run("ldd", str(binary)).stdout
    assert "libswift" not in libraries and "libFoundation" not in libraries, libraries
    assert "libturbojpeg" in libraries and "libsqlite3" in libraries
    # libcurl is loaded by the first webhook or S3 sink, not at start-up (its 24 libraries: 3.9 MiB).
    assert "libcurl" not in libraries and "libgnutls" not in libraries, libraries
    # Linked by lld with packed relative relocations: 8 KiB of them, not 0.9 MiB read at start-up.
    assert "(RELR)" in run("readelf", "-d", str(binary)).stdout
    assert run(str(binary), "--version").stdout.startswith("shutterd ")
    unit = (root / "etc/systemd/system/shutterd.service").read_text()
    assert "ExecStart=/usr/local/bin/shutterd --config /etc/shutterd.json" in unit
    assert "Type=notify" in unit
    # systemd-analyze checks the unit against this machine's systemd; its ExecStart must exist
    # here, so the copy it reads points at the staged binary.
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "shutterd.service").write_text(unit.replace("/usr/local/bin/shutterd", str(binary)))
    (tmp_path / "verify" / "shutterd.socket").write_text((root / "etc/systemd/system/shutterd.socket").read_text())
    verify = run(
        "systemd-analyze", "verify", str(tmp_path / "verify" / "shutterd.service"),
        str(tmp_path / "verify" / "shutterd.socket"))
    assert verify.returncode == 0 and verify.stderr == "", verify.stderr
    # The sandbox: systemd's own exposure score for the unit (0 is locked down, 10 is open).
    security = run("systemd-analyze", "security", "--offline=true", str(tmp_path / "verify" / "shutterd.service"))
    score = float(re.search(r"Overall exposure level for shutterd.service: ([0-9.]+)", security.stdout).group(1))
    assert score <= 2.0, security.stdout
    assert (root / "etc/shutterd.json").read_text() == open(os.path.join(REPOSITORY, "config/shutterd.json")).read()
    # The man page says what --help says: every option is in both.
    page = root / "usr/local/share/man/man8/shutterd.8"
    assert run("groff", "-man", "-ww", "-z", str(page)).stderr == ""
    rendered = run("man", "-l", str(page), env={**os.environ, "MANWIDTH": "200", "MAN_KEEP_FORMATTING": ""}).stdout
    rendered = re.sub(r".\x08", "", rendered)
    flags = set(re.findall(r"^  (--[a-z-]+)", run(str(binary), "--help").stdout, re.M))
    assert len(flags) > 30
    missing = [flag for flag in flags if flag not in rendered]
    assert missing == [], missing
    # A second install keeps a config the administrator changed.
    (root / "etc/shutterd.json").write_text('{"fps": 10}\n')
    assert run(INSTALL, "--root", str(root)).returncode == 0
    assert (root / "etc/shutterd.json").read_text() == '{"fps": 10}\n'
    result = run(INSTALL, "--uninstall", "--root", str(root))
    assert result.returncode == 0, result.stderr
    assert not binary.exists() and not page.exists()
    assert not (root / "etc/systemd/system/shutterd.service").exists()
    assert not (root / "etc/systemd/system/shutterd.socket").exists()
    assert (root / "etc/shutterd.json").exists()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("dpkg") is None, reason="installing a package needs root")
def test_the_debian_package_installs_runs_and_purges(tmp_path):
    if run("dpkg-query", "-W", "shutterd").returncode == 0:
        pytest.skip("a shutterd package is already installed here; not touching it")
    result = run(INSTALL, "--deb")
    assert result.returncode == 0, result.stderr[-3000:]
    deb = result.stdout.strip().splitlines()[-1]
    contents = run("dpkg-deb", "--contents", deb).stdout
    for path in ("./usr/bin/shutterd", "./lib/systemd/system/shutterd.service",
                 "./lib/systemd/system/shutterd.socket", "./etc/shutterd.json",
                 "./usr/share/man/man8/shutterd.8.gz"):
        assert path in contents, contents
    info = run("dpkg-deb", "--info", deb).stdout
    assert "libturbojpeg0" in info and "libsqlite3-0" in info and "libc6" in info, info
    assert "libcurl4" in info, info  # loaded with dlopen, so ldd does not name it
    assert "libc6 (>= 2.36)" in info, info  # packed relative relocations (DT_RELR)
    installed = run("dpkg", "-i", deb)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    try:
        assert run("/usr/bin/shutterd", "--version").stdout.startswith("shutterd ")
        assert "ExecStart=/usr/bin/shutterd" in open("/lib/systemd/system/shutterd.service").read()
        d = Daemon(tmp_path / "data", ["--size", "320x240"], binary="/usr/bin/shutterd").start()
        try:
            assert d.request("GET", "/healthz")[0] == 200
            assert d.json("POST", "/snap")[0] == 201
        finally:
            d.stop()
    finally:
        purged = run("dpkg", "--purge", "shutterd")
        assert purged.returncode == 0, purged.stderr
    assert not os.path.exists("/usr/bin/shutterd")
