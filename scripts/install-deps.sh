#!/usr/bin/env bash
# Installs what jambridge needs to build and test on Debian 12, if it is missing.
#   scripts/install-deps.sh        everything the tests need
#   scripts/install-deps.sh run    only what building and running jambridge needs
# Swift 6.x itself is a prerequisite (https://www.swift.org/install/linux/): it is not an apt package.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages:
#   libavahi-compat-libdnssd-dev  the dns_sd library jambridge links for Bonjour
#   mandoc                        lints the man pages in the tests
#   tshark                        decodes captures of our RTP-MIDI traffic (a peer we did not write)
#   python3-venv                  the virtual environment holding PyPI pymidi (another such peer)
#   avahi-daemon avahi-utils dbus iproute2   Bonjour between network namespaces (scripts/avahi-lab.sh), and the
#                                 scenario's LAN with netem delay and loss (scripts/scenario-lab.sh: ip, tc)
#   libasound2-dev                the ALSA library jambridge links for its sequencer endpoints
#   liblo-dev                     the OSC library jambridge links for its OSC endpoints
#   liblo-tools                   oscsend and oscdump: OSC peers nobody here wrote, in the OSC tests
#   alsa-utils                    aconnect, amidi, aseqdump: peers and checks in the ALSA tests
#   qemu-system-x86               the VM with a real ALSA sequencer (scripts/alsa-vm.sh)
#   linux-image-amd64             that VM's kernel and its snd-seq, snd-virmidi, snd-aloop modules
#   busybox-static                that VM's init
#   libsndfile1-dev               the sound-file library jambridge loads to read drum samples and write renders
#   libsamplerate0-dev            the sample-rate converter jambridge loads to bring samples to 48 kHz and pitch them
#   libxml2-dev                   the XML library jambridge loads to read Hydrogen drum kits (drumkit.xml)
#   libyaml-dev                   the YAML parser jambridge links to read route, style and kit files
#   hydrogen-drumkits             Debian's 14 Hydrogen kits, which the kit and drum tests load
#   sox                           makes the kit tests' samples and reads audio back (a tool nobody here wrote)
#   python3-soundfile             reads jambridge's renders back in the drum tests (a WAV reader nobody here wrote)
#   python3-numpy                 the scenario's levels of the captured drums (Tests/Peers/wav_levels.py)
#   make                          make install / make uninstall (the Makefile)
#   man-db                        man, which the install tests ask where the installed pages are
#   systemd procps                systemd-analyze verify of the unit in the tests; kill, which its ExecReload runs
#   chromium                      a real headless browser on the status page (its DevTools protocol, Tests/Peers/browser.py)
#   ableton-link-dev libasio-dev  Ableton Link's headers, which jambridge's CLink target includes (<ableton/Link.hpp>), and
#                                 the standalone asio they include
#   ableton-link-utils            LinkHut, Ableton's own Link app: a Link peer nobody here wrote (Tests/Peers/linkhut.py)
#   jackd2                        the JACK server LinkHut needs to run at all: linkhut.py starts one of its own on
#                                 JACK's dummy driver (no sound card)
packages=(libavahi-compat-libdnssd-dev libasound2-dev liblo-dev libsndfile1-dev libsamplerate0-dev libxml2-dev libyaml-dev make)
[ "${1:-}" = run ] || packages+=(mandoc tshark python3-venv avahi-daemon avahi-utils dbus iproute2 alsa-utils liblo-tools
                                 hydrogen-drumkits sox python3-soundfile python3-numpy man-db systemd procps chromium
                                 ableton-link-utils)
# Packages without their recommendations: Link's headers and asio (Boost's headers and libssl-dev, which Link's
# use of asio never includes), jackd2 (qjackctl's GUI, a FireWire driver) and the VM's (qemu's GUI, apparmor,
# firmware).
bare_packages=(ableton-link-dev libasio-dev)
[ "${1:-}" = run ] || bare_packages+=(jackd2 qemu-system-x86 linux-image-amd64 busybox-static)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
missing=() bare_missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${bare_packages[@]}"; do installed "$p" || bare_missing+=("$p"); done
if ((${#missing[@]} + ${#bare_missing[@]})); then
    echo "install-deps: installing ${missing[*]} ${bare_missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    # A policy-rc.d keeps the host's avahi-daemon from starting: mDNS stays inside the test
    # namespaces. (One that is already there is left as it is.)
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
        $sudo chmod +x "$policy"
    fi
    ((${#missing[@]} == 0)) ||
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    # INITRD=No: the kernel is only booted by scripts/alsa-vm.sh, with an initrd of its own,
    # so its hooks make no initramfs (a minute and 40 MB saved); with no bootloader installed
    # they configure none. (jackd2's question, whether JACK may run realtime, keeps its "no".)
    ((${#bare_missing[@]} == 0)) ||
        $sudo env DEBIAN_FRONTEND=noninteractive INITRD=No \
            apt-get install -y -qq --no-install-recommends "${bare_missing[@]}" >/dev/null
    [ -z "$policy" ] || $sudo rm -f "$policy"
fi

# PyPI pymidi 0.5.0 (an RTP-MIDI responder nobody here wrote), python-osc 1.9.3 (OSC
# controllers nobody here wrote), mido 1.3.3 and pretty_midi 0.2.11.post0 (two Standard MIDI
# File readers nobody here wrote, for the recordings and their tempo maps), aalink 0.2.3 (Ableton
# Link's own library for Python, no dependencies: the Link peer Tests/Peers/link_peer.py),
# pinned with their dependencies.
venv=.build-peers/venv
if [ "${1:-}" != run ] && ! "$venv/bin/python" -c "import pymidi, pythonosc, mido, pretty_midi, aalink" 2>/dev/null; then
    echo "install-deps: installing pymidi, python-osc, mido, pretty_midi and aalink into $venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q pymidi==0.5.0 construct==2.10.70 future==1.0.0 six==1.17.0 python-osc==1.9.3 \
        mido==1.3.3 packaging==24.2 pretty_midi==0.2.11.post0 numpy==2.4.6 importlib_resources==7.1.0 aalink==0.2.3
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "install-deps: swift not found; install Swift 6.1 or later from swift.org and put it on PATH" >&2
    exit 1
fi
