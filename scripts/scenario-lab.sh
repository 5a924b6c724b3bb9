#!/usr/bin/env bash
# scenario-lab.sh: the three simulated hosts of the acceptance scenario (issue 16) on one virtual LAN, each in its
# own network namespace with its own avahi-daemon, the LAN delaying and losing packets as Wi-Fi does.
#
#   scripts/scenario-lab.sh up                 create the hosts rack, phone and laptop (namespaces jb-rack, jb-phone,
#                                              jb-laptop: 10.78.0.1-3/24 on their eth0) plugged into a switch (a bridge
#                                              in namespace jb-lan), netem on every host's eth0, and a private
#                                              dbus-daemon + avahi-daemon per host (idempotent)
#   scripts/scenario-lab.sh exec HOST CMD...   run CMD on HOST (rack, phone or laptop), seeing HOST's own /run, so
#                                              dns_sd and the avahi-* tools reach HOST's avahi-daemon
#   scripts/scenario-lab.sh unplug HOST        take HOST's cable out of the switch (its switch port goes down: no
#                                              packet either way, HOST's eth0 loses carrier, its address stays)
#   scripts/scenario-lab.sh plug HOST          put it back
#   scripts/scenario-lab.sh status             show the hosts, their addresses, qdiscs and daemons
#   scripts/scenario-lab.sh down               stop the daemons, delete the namespaces and the temporary directory
#
# The LAN: each host's eth0 sends through `tc qdisc ... netem $SCENARIO_NETEM` (default "delay 5ms 2ms loss 1%"), so
# every packet between two hosts is delayed 3-7 ms and 1 % of them are lost, each way; the switch itself adds
# nothing. Nothing reaches the machine's real network: the hosts' only interfaces are lo and eth0, the switch's only
# ports are theirs, avahi is told allow-interfaces=eth0, and no namespace has a route out.
#
# Needs root and the Debian packages iproute2 (ip, tc), dbus, avahi-daemon and avahi-utils; the kernel modules veth,
# bridge and sch_netem (loaded here: in scripts/alsa-vm.sh's VM the kernel cannot load modules by itself).
# Each host's /run is the directory $JB_SCENARIO_LAB_DIR/HOST/run bind-mounted over /run (scripts/lab-hosts.sh, shared
# with scripts/avahi-lab.sh) in a private mount namespace; the daemons keep theirs alive, `exec` builds it again.
set -euo pipefail

BASE="${JB_SCENARIO_LAB_DIR:-/tmp/jambridge-scenario-lab}"
HOSTS=(rack phone laptop)
SWITCH=jb-lan
NETEM="${SCENARIO_NETEM:-delay 5ms 2ms loss 1%}"
export AVAHI_COMPAT_NOWARN=1
PATH=$PATH:/usr/sbin:/sbin

die() { echo "scenario-lab: $*" >&2; exit 1; }
log() { echo "scenario-lab: $*" >&2; }

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (it creates network namespaces)"; }

need_tools() {
    local t missing=()
    for t in ip tc unshare mount dbus-daemon avahi-daemon avahi-browse; do
        command -v "$t" >/dev/null 2>&1 || missing+=("$t")
    done
    ((${#missing[@]} == 0)) || die "missing ${missing[*]}; install the Debian packages iproute2 dbus avahi-daemon avahi-utils"
}

ns_of() {
    case "$1" in rack | phone | laptop) echo "jb-$1" ;; *) die "unknown host '$1' (rack, phone or laptop)" ;; esac
}
addr_of() { case "$1" in rack) echo 10.78.0.1 ;; phone) echo 10.78.0.2 ;; laptop) echo 10.78.0.3 ;; esac; }
# shellcheck source=scripts/lab-hosts.sh
. "$(dirname "$0")/lab-hosts.sh"

cmd_up() {
    need_root; need_tools
    local m host ns
    for m in veth bridge sch_netem; do modprobe -q "$m" 2>/dev/null || true; done
    mkdir -p "$BASE"
    ns_exists "$SWITCH" || ip netns add "$SWITCH"
    ip -n "$SWITCH" link set lo up
    ip -n "$SWITCH" link show lan >/dev/null 2>&1 || ip -n "$SWITCH" link add lan type bridge
    # No IPv6 on the switch (no link-local address, no router solicitations): it only forwards.
    ip netns exec "$SWITCH" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
    ip -n "$SWITCH" link set lan up
    for host in "${HOSTS[@]}"; do
        ns=$(ns_of "$host")
        ns_exists "$ns" || ip netns add "$ns"
        ip -n "$ns" link set lo up
        if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
            ip -n "$SWITCH" link del "$host" 2>/dev/null || true
            ip link add eth0 netns "$ns" type veth peer name "$host" netns "$SWITCH"
        fi
        ip -n "$SWITCH" link set "$host" master lan up
        ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
        ip -n "$ns" addr replace "$(addr_of "$host")/24" dev eth0
        ip -n "$ns" link set eth0 up multicast on
        # shellcheck disable=SC2086 # the netem parameters are words
        tc -n "$ns" qdisc replace dev eth0 root netem $NETEM
    done
    # The three hosts' daemons start side by side (each waits for its avahi-daemon to answer).
    local pids=() failed=0 pid
    for host in "${HOSTS[@]}"; do start_daemons "$host" "$(ns_of "$host")" eth0 & pids+=("$!"); done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    ((failed == 0)) || die "the daemons did not start on every host"
    for host in "${HOSTS[@]}"; do
        log "$host: $(addr_of "$host") on eth0 (netem $NETEM), dbus pid $(dbus_pid "$host" || echo '?'), avahi pid $(avahi_pid "$host" || echo '?')"
    done
}

cmd_exec() {
    need_root
    (($# >= 2)) || die "usage: $0 exec HOST CMD [ARGS...]"
    local ns
    ns=$(ns_of "$1")
    lab_command "$1" "$ns"
    shift
    # ip netns exec forks: signalling this script's pid does not reach CMD (have CMD say its own pid).
    exec "${LAB_COMMAND[@]}" "$@"
}

cmd_cable() {
    need_root
    (($# == 2)) || die "usage: $0 unplug|plug HOST"
    ns_of "$2" >/dev/null
    ip -n "$SWITCH" link set "$2" "$1"
}

cmd_status() {
    local host ns
    for host in "${HOSTS[@]}"; do
        ns=$(ns_of "$host")
        if ns_exists "$ns"; then
            echo "$host: dbus pid $(dbus_pid "$host" || echo none), avahi pid $(avahi_pid "$host" || echo none)"
            ip -n "$ns" -br addr show dev eth0
            tc -n "$ns" qdisc show dev eth0
        else
            echo "$host: no namespace"
        fi
    done
    ns_exists "$SWITCH" && ip -n "$SWITCH" -br link show
}

cmd_down() {
    need_root
    local host
    for host in "${HOSTS[@]}"; do stop_host "$host" "$(ns_of "$host")"; done
    ns_exists "$SWITCH" && ip netns del "$SWITCH"
    rm -rf "$BASE"
    log "down"
}

case "${1:-}" in
    up) shift; cmd_up "$@" ;;
    exec) shift; cmd_exec "$@" ;;
    unplug) shift; cmd_cable down "$@" ;;
    plug) shift; cmd_cable up "$@" ;;
    status) shift; cmd_status "$@" ;;
    down) shift; cmd_down "$@" ;;
    -h | --help | help | "") sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' ;;
    *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
