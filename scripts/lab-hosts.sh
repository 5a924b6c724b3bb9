# lab-hosts.sh: the simulated hosts that scripts/avahi-lab.sh and scripts/scenario-lab.sh build, each a network
# namespace with its own dbus-daemon and avahi-daemon. Sourced, not run; the sourcing script sets BASE (each host's
# files are in $BASE/NAME) and defines die and log.
#
# A host's /run is the directory $BASE/NAME/run, bind-mounted over /run in a private mount namespace (unshare -m);
# the machine's own /run is never touched. The daemons keep their mount namespace alive after the script exits, and
# lab_run builds the same view again, so a command it runs finds /run/dbus/system_bus_socket of that host's
# dbus-daemon (and dns_sd and the avahi-* tools reach its avahi-daemon).

# Pid from a pid file, if that process is alive.
live_pid() {
    local f="$1" pid
    [ -r "$f" ] || return 1
    pid="$(tr -dc '0-9' <"$f")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}
dbus_pid() { live_pid "$BASE/$1/run/dbus/pid"; }
avahi_pid() { live_pid "$BASE/$1/run/avahi-daemon/pid"; }
ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

# lab_command NAME NS: sets LAB_COMMAND to the words that run a command in namespace NS with /run replaced by host
# NAME's. `ip netns exec` forks: signalling it does not reach the command (have the command write its own pid:
# sh -c 'echo $$ >F; exec CMD').
lab_command() {
    local name="$1" ns="$2"
    ns_exists "$ns" || die "$name does not exist; run: $0 up"
    [ -d "$BASE/$name/run" ] || die "no $BASE/$name/run; run: $0 up"
    # ip netns exec already unshares the mount namespace; unshare -m again with private propagation so the bind
    # mount never propagates anywhere else.
    LAB_COMMAND=(ip netns exec "$ns" unshare -m --propagation private
        env -u DBUS_SYSTEM_BUS_ADDRESS JB_LAB_RUN="$BASE/$name/run" AVAHI_COMPAT_NOWARN=1
        sh -c 'mount --bind "$JB_LAB_RUN" /run && exec "$@"' lab-run)
}

# lab_run NAME NS CMD...: runs CMD on host NAME (namespace NS).
lab_run() { lab_command "$1" "$2"; shift 2; "${LAB_COMMAND[@]}" "$@"; }

# start_daemons NAME NS IFACE: host NAME's dbus-daemon and avahi-daemon (avahi on IFACE only, IPv4 only, its host
# name NAME), unless they run already; returns once avahi answers on the bus.
start_daemons() {
    local name="$1" ns="$2" iface="$3" i
    mkdir -p "$BASE/$name/run/dbus" "$BASE/$name/run/avahi-daemon"
    cat >"$BASE/$name/avahi-daemon.conf" <<EOF
# $(basename "$0"): the avahi of host $name. Only its $iface, IPv4 only.
[server]
host-name=$name
domain-name=local
use-ipv4=yes
use-ipv6=no
allow-interfaces=$iface
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
publish-hinfo=no
publish-workstation=no
publish-addresses=yes

[reflector]
enable-reflector=no

[rlimits]
EOF
    if ! dbus_pid "$name" >/dev/null; then
        rm -f "$BASE/$name/run/dbus/pid" "$BASE/$name/run/dbus/system_bus_socket"
        # The daemons outlive the script: they must not hold its caller's pipes open.
        lab_run "$name" "$ns" dbus-daemon --system --fork </dev/null >/dev/null 2>&1
        for i in $(seq 100); do [ -S "$BASE/$name/run/dbus/system_bus_socket" ] && break; sleep 0.1; done
        [ -S "$BASE/$name/run/dbus/system_bus_socket" ] || die "dbus-daemon did not start on $name"
    fi
    if ! avahi_pid "$name" >/dev/null; then
        rm -f "$BASE/$name/run/avahi-daemon/pid"
        lab_run "$name" "$ns" avahi-daemon --no-chroot --no-drop-root -f "$BASE/$name/avahi-daemon.conf" -D \
            </dev/null >/dev/null 2>&1 || die "avahi-daemon did not start on $name (run it with --debug to see why)"
        # Ready once it answers on the bus.
        for i in $(seq 300); do
            lab_run "$name" "$ns" avahi-browse -at -p >/dev/null 2>&1 && break
            sleep 0.1
        done
    fi
}

# stop_host NAME NS: stops host NAME's daemons and anything else running in NS, and deletes NS.
stop_host() {
    local name="$1" ns="$2" pid i
    for pid in $(avahi_pid "$name") $(dbus_pid "$name"); do
        kill "$pid" 2>/dev/null || true
        for i in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    if ns_exists "$ns"; then
        # Anything else still running in the namespace (a forgotten avahi-publish), by its pid.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
        ip netns del "$ns"
    fi
}
