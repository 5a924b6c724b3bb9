#!/usr/bin/env bash
# avahi-lab.sh: two simulated hosts for Bonjour (mDNS) tests, kept inside network namespaces.
#
#   scripts/avahi-lab.sh up              create namespaces jb-a and jb-b joined by a veth pair
#                                        (10.77.0.1/24 <-> 10.77.0.2/24) and start a private
#                                        dbus-daemon + avahi-daemon in each (idempotent)
#   scripts/avahi-lab.sh exec NS CMD...  run CMD in namespace NS, seeing NS's own /run, so dns_sd
#                                        and avahi-* tools reach NS's avahi-daemon
#   scripts/avahi-lab.sh status          show namespaces and daemons
#   scripts/avahi-lab.sh selftest        publish in jb-a with avahi-publish, browse from jb-b with
#                                        avahi-browse, check nothing left through the real interface
#   scripts/avahi-lab.sh down            stop the daemons, delete the namespaces and temp dirs
#
# Needs root (ip netns, mount) and the Debian packages iproute2, dbus, avahi-daemon, avahi-utils
# (and libavahi-compat-libdnssd-dev to build jambridge's Bonjour module). The selftest's leak check
# uses dumpcap (wireshark-common / tshark) when present and the interface counters otherwise.
#
# mDNS never reaches the machine's real network: each daemon runs in a network namespace whose only
# interfaces are lo and one end of the veth pair, and avahi is told allow-interfaces=<that veth>.
# The host's own /run is never touched: each namespace's /run is the directory
# $JB_AVAHI_LAB_DIR/<ns>/run, bind-mounted over /run in a private mount namespace (unshare -m). The
# daemons keep that mount namespace alive after this script exits, and `exec` builds the same view
# again (another private mount namespace with the same directory bind-mounted over /run), so a
# command run through `exec` finds /run/dbus/system_bus_socket of that namespace's dbus-daemon.
set -euo pipefail

BASE="${JB_AVAHI_LAB_DIR:-/tmp/jambridge-avahi-lab}"
NAMESPACES=(jb-a jb-b)
SUBNET_PREFIX="10.77.0"
SERVICE_TYPE="_apple-midi._udp"
export AVAHI_COMPAT_NOWARN=1

die() { echo "avahi-lab: $*" >&2; exit 1; }
log() { echo "avahi-lab: $*" >&2; }

need_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (it creates network namespaces); try: sudo $0 $*"
}

need_tools() {
    local t missing=()
    for t in ip unshare mount dbus-daemon avahi-daemon avahi-browse avahi-publish; do
        command -v "$t" >/dev/null 2>&1 || missing+=("$t")
    done
    ((${#missing[@]} == 0)) || die "missing ${missing[*]}; install the Debian packages iproute2 dbus avahi-daemon avahi-utils"
}

# veth end, address and avahi host name of a namespace.
veth_of() { echo "${1}0"; }
addr_of() { case "$1" in jb-a) echo "$SUBNET_PREFIX.1";; jb-b) echo "$SUBNET_PREFIX.2";; *) die "unknown namespace '$1' (use jb-a or jb-b)";; esac; }

# shellcheck source=scripts/lab-hosts.sh
. "$(dirname "$0")/lab-hosts.sh"

# Runs "$@" inside namespace $1 with /run replaced by $BASE/$1/run.
in_ns() { local ns="$1"; shift; lab_run "$ns" "$ns" "$@"; }

cmd_up() {
    need_root; need_tools
    mkdir -p "$BASE"
    local ns
    for ns in "${NAMESPACES[@]}"; do
        ns_exists "$ns" || ip netns add "$ns"
        ip -n "$ns" link set lo up
    done
    if ! ip -n jb-a link show "$(veth_of jb-a)" >/dev/null 2>&1; then
        # A half-made pair (one end left over) would make the add fail: clear it first.
        ip -n jb-b link del "$(veth_of jb-b)" 2>/dev/null || true
        ip link add "$(veth_of jb-a)" netns jb-a type veth peer name "$(veth_of jb-b)" netns jb-b
    fi
    for ns in "${NAMESPACES[@]}"; do
        ip -n "$ns" addr replace "$(addr_of "$ns")/24" dev "$(veth_of "$ns")"
        ip -n "$ns" link set "$(veth_of "$ns")" up multicast on
    done
    for ns in "${NAMESPACES[@]}"; do
        start_daemons "$ns" "$ns" "$(veth_of "$ns")"
        log "$ns: $(addr_of "$ns") on $(veth_of "$ns"), dbus pid $(dbus_pid "$ns" || echo '?'), avahi pid $(avahi_pid "$ns" || echo '?')"
    done
}

cmd_exec() {
    need_root
    (($# >= 2)) || die "usage: $0 exec NS CMD [ARGS...]"
    addr_of "$1" >/dev/null
    lab_command "$1" "$1"
    shift
    # To stop CMD later, have it write its own pid (sh -c 'echo $$ >F; exec CMD'), as selftest does.
    exec "${LAB_COMMAND[@]}" "$@"
}

cmd_down() {
    need_root
    local ns
    for ns in "${NAMESPACES[@]}"; do stop_host "$ns" "$ns"; done
    rm -rf "$BASE"
    log "down"
}

cmd_status() {
    local ns
    for ns in "${NAMESPACES[@]}"; do
        if ns_exists "$ns"; then
            echo "$ns: namespace up; dbus pid $(dbus_pid "$ns" || echo none); avahi pid $(avahi_pid "$ns" || echo none)"
            ip -n "$ns" -br addr show
        else
            echo "$ns: no namespace"
        fi
    done
}

# Real interfaces of the host (not lo, not veth/ifb/bridges): where mDNS must never appear.
real_ifaces() {
    local d
    for d in /sys/class/net/*; do
        d="${d##*/}"
        [ "$d" = lo ] && continue
        [ -e "/sys/class/net/$d/device" ] || [ "$d" = eth0 ] || continue
        echo "$d"
    done
}

cmd_selftest() {
    need_root
    cmd_up
    # avahi-browse -p escapes spaces (\032): keep the name free of them so it reads back verbatim.
    local name="jambridge-lab-$$" out pub_pid="" cap_pids=() cap_dir iface rc=0
    cap_dir="$(mktemp -d)"
    declare -A tx_before
    for iface in $(real_ifaces); do
        tx_before[$iface]="$(cat "/sys/class/net/$iface/statistics/tx_packets")"
        if command -v dumpcap >/dev/null 2>&1; then
            dumpcap -q -i "$iface" -f 'udp port 5353 or ip6 and udp port 5353' -w "$cap_dir/$iface.pcapng" >/dev/null 2>&1 &
            cap_pids+=("$!")
        fi
    done
    sleep 1
    # The publisher writes its own pid (the sh execs avahi-publish), so it can be stopped by pid.
    in_ns jb-a sh -c 'echo $$ >"$0"; exec avahi-publish -s "$1" "$2" 5004' \
        "$cap_dir/publish.pid" "$name" "$SERVICE_TYPE" >/dev/null 2>&1 &
    local pub_job=$!
    for _ in $(seq 20); do [ -s "$cap_dir/publish.pid" ] && break; sleep 0.1; done
    pub_pid="$(cat "$cap_dir/publish.pid" 2>/dev/null || true)"
    [ -n "$pub_pid" ] || die "avahi-publish did not start in jb-a"
    out=""
    for _ in $(seq 10); do
        sleep 1
        out="$(in_ns jb-b avahi-browse -rpt "$SERVICE_TYPE" 2>/dev/null || true)"
        grep -q "^=;$(veth_of jb-b);IPv4;$name;$SERVICE_TYPE;local;jb-a.local;$SUBNET_PREFIX.1;5004;" <<<"$out" && break
    done
    kill "$pub_pid" 2>/dev/null || true
    wait "$pub_job" 2>/dev/null || true
    echo "$out"
    if grep -q "^=;$(veth_of jb-b);IPv4;$name;$SERVICE_TYPE;local;jb-a.local;$SUBNET_PREFIX.1;5004;" <<<"$out"; then
        echo "selftest: OK: jb-b resolved '$name' published in jb-a (jb-a.local, $SUBNET_PREFIX.1:5004)"
    else
        echo "selftest: FAIL: jb-b did not resolve '$name' published in jb-a" >&2
        rc=1
    fi
    # After the publisher quits, the service must go away (goodbye packet).
    sleep 2
    if in_ns jb-b avahi-browse -pt "$SERVICE_TYPE" 2>/dev/null | grep -q ";$name;"; then
        echo "selftest: FAIL: '$name' still listed in jb-b after the publisher stopped" >&2
        rc=1
    else
        echo "selftest: OK: '$name' gone from jb-b after the publisher stopped"
    fi
    sleep 1
    local p
    for p in "${cap_pids[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    for iface in $(real_ifaces); do
        if [ -s "$cap_dir/$iface.pcapng" ] && command -v capinfos >/dev/null 2>&1; then
            local n
            n="$(capinfos -c -M "$cap_dir/$iface.pcapng" 2>/dev/null | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}')"
            if [ "${n:-0}" != 0 ]; then
                echo "selftest: FAIL: $n mDNS packets seen on the real interface $iface" >&2
                rc=1
            else
                echo "selftest: OK: no mDNS packet on the real interface $iface (dumpcap)"
            fi
        fi
        echo "selftest: $iface sent $(( $(cat "/sys/class/net/$iface/statistics/tx_packets") - ${tx_before[$iface]} )) packets in total during the test (any traffic of the machine)"
    done
    rm -rf "$cap_dir"
    return "$rc"
}

usage() {
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
}

case "${1:-}" in
    up) shift; cmd_up "$@";;
    exec) shift; cmd_exec "$@";;
    down) shift; cmd_down "$@";;
    status) shift; cmd_status "$@";;
    selftest) shift; cmd_selftest "$@";;
    -h|--help|help|"") usage;;
    *) usage >&2; exit 2;;
esac
