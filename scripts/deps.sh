# Installs the Debian packages named in the arguments that are missing (sourced by run and test).
install_debian_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# What building shutterd needs: the C libraries it links (see Package.swift), the kernel's V4L2
# header (linux-libc-dev) and pkg-config; fonts-dejavu-core is the burned-in text's default font;
# libmosquitto-dev is the MQTT sink's client library.
BUILD_PACKAGES=(pkg-config libturbojpeg0-dev libsqlite3-dev libssl-dev libv4l-dev linux-libc-dev libfreetype-dev
    libcurl4-openssl-dev fonts-dejavu-core libmosquitto-dev)

# The MQTT tests' subscriber (Tests/e2e/mqtt_broker.py) and benchmarks/run-all's, from PyPI, pinned.
PAHO_MQTT_PIN="paho-mqtt==2.1.0"

# Swift lives in /opt/swift on our machines; use it when it is not on PATH yet.
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
