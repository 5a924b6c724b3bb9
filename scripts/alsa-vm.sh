#!/usr/bin/env bash
# Runs a command inside a throw-away Linux VM that has a real ALSA sequencer, for machines
# without sound support (CI containers, this project's development machines).
#
#   scripts/alsa-vm.sh [--mem MB] [--cpus N] [--timeout S] -- COMMAND [ARGS...]
#
# The VM boots this machine's Debian kernel (/boot/vmlinuz-*, linux-image-amd64) under QEMU
# software emulation with these modules loaded:
#   snd-seq, snd-seq-dummy      the sequencer (/dev/snd/seq) and its "Midi Through" client
#   snd-virmidi midi_devs=4     "Virtual Raw MIDI 0-0".."0-3" (rawmidi hw:0,0..hw:0,3): bytes
#                               played into hw:0,N come out of that seq client, as from a USB
#                               keyboard; unplug/replug with snd_virmidi.0 > .../unbind, bind
#   snd-aloop                   a loopback PCM card (play on hw:Loopback,0, capture on ,1)
#   snd-hrtimer                 the sequencer queues' timer, as on a real machine (not 4 ms jiffies)
# It sees this machine's root filesystem read-only, the current directory read-write at the
# same path, and private tmpfs on /tmp, /run and /dev/shm. COMMAND runs as root in the current
# directory; its output (stdout and stderr together) goes to stdout and its exit status
# becomes this script's. 124: the VM did not finish (timeout, crash); 2: the VM could not be
# set up (missing package, no sequencer in the VM).
#
# Debugging: ALSA_VM_KEEP=1 keeps the work directory (initrd and the whole serial console,
# boot included, in console.log) and prints where it is; ALSA_VM_CONSOLE=1 shows the whole
# console (kernel messages included) as it happens instead of only the command's output.
# ALSA_VM_KERNEL=VERSION picks a kernel other than the newest one in /boot.
#
# Needs (Debian): qemu-system-x86 linux-image-amd64 busybox-static (scripts/install-deps.sh).
# Nested KVM is not available on these machines: timings inside the VM are emulated (~30x
# slower), so test behaviour there and measure speed on the host.
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin # modprobe and ip, also for a user whose PATH lacks them
MEM=1536 CPUS=2 TIMEOUT=600
usage() { echo "usage: scripts/alsa-vm.sh [--mem MB] [--cpus N] [--timeout S] -- COMMAND [ARGS...]" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --mem) [ $# -ge 2 ] || usage; MEM=$2; shift 2 ;;
        --cpus) [ $# -ge 2 ] || usage; CPUS=$2; shift 2 ;;
        --timeout) [ $# -ge 2 ] || usage; TIMEOUT=$2; shift 2 ;;
        --) shift; break ;;
        -h | --help) usage ;;
        -*) echo "alsa-vm: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || usage

die() { echo "alsa-vm: $*" >&2; exit 2; }
need() { command -v "$1" >/dev/null 2>&1 || die "missing $1 (apt-get install -y $2, or scripts/install-deps.sh)"; }
need qemu-system-x86_64 qemu-system-x86
need busybox busybox-static
need modprobe kmod
need gzip gzip

# The kernel: the newest one that has both /boot/vmlinuz-V and /lib/modules/V (a container's
# /lib/modules may also hold a directory for the host's running kernel, with no image).
KVER=${ALSA_VM_KERNEL:-}
if [ -z "$KVER" ]; then
    for v in $(ls /lib/modules 2>/dev/null | sort -V); do
        [ -f "/boot/vmlinuz-$v" ] && KVER=$v
    done
fi
KERNEL=/boot/vmlinuz-$KVER
[ -n "$KVER" ] && [ -f "$KERNEL" ] && [ -d "/lib/modules/$KVER" ] ||
    die "no kernel in /boot with its modules in /lib/modules (apt-get install -y linux-image-amd64)"
[ -r "$KERNEL" ] || die "$KERNEL is not readable by $(id -un) (run as root)"

WORKDIR=$PWD
WORK=$(mktemp -d /tmp/alsa-vm.XXXXXX)
cleanup() {
    if [ -n "${ALSA_VM_KEEP:-}" ]; then echo "alsa-vm: kept $WORK (console.log)" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
mkdir -p "$WORK/root"/{bin,mod,proc,sys,dev,host}
cp "$(command -v busybox)" "$WORK/root/bin/busybox"
ln -s busybox "$WORK/root/bin/sh"

# What the initrd needs to mount the host's filesystems over 9p (whatever of it is not built in).
i=0
while read -r f; do
    i=$((i + 1))
    cp "$f" "$WORK/root/mod/$(printf %02d $i)-$(basename "$f")"
done < <(for m in virtio_pci 9pnet_virtio 9p; do modprobe -S "$KVER" --show-depends "$m"; done |
    awk '$1 == "insmod" && !seen[$2]++ { print $2 }')

# Quotes for a POSIX shell (the guest runs the host's /bin/sh, dash: no $'...').
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
CMD=""
for a in "$@"; do CMD="$CMD $(q "$a")"; done

# Runs in the host's root, chrooted, once the filesystems are mounted.
cat >"$WORK/root/guest.sh" <<GUEST
export PATH=$(q "$PATH") HOME=/root LANG=C.UTF-8 ALSA_VM=1
ip link set lo up 2>/dev/null
# snd-hrtimer first: the sequencer's queues take it as their timer when it is there (Debian's
# CONFIG_SND_SEQ_HRTIMER_DEFAULT), as on a real machine, whose kernel loads it on demand; this
# kernel cannot load modules by itself, and without it queues tick with the 4 ms system timer.
for m in snd-hrtimer snd-seq snd-seq-dummy 'snd-virmidi midi_devs=4' snd-aloop; do
    modprobe \$m || echo "alsa-vm: modprobe \$m failed"
done
if [ ! -e /dev/snd/seq ]; then echo; echo ALSA_VM_NO_SEQUENCER; exit; fi
cd $(q "$WORKDIR") || { echo; echo ALSA_VM_NO_WORKDIR; exit; }
echo; echo ALSA_VM_BEGIN
$CMD
printf '\nALSA_VM_EXIT=%d\n' \$?
GUEST

# cache=loose: nothing changes the files under the guest while it runs, and caching makes
# loading the test binary and the Swift runtime over 9p several times faster (list-tests 2.5 s
# instead of 3-17 s). The guest's writes reach the host by the sync before poweroff.
cat >"$WORK/root/init" <<INIT
#!/bin/busybox sh
B=/bin/busybox
\$B mount -t proc proc /proc; \$B mount -t sysfs sys /sys; \$B mount -t devtmpfs dev /dev
for m in /mod/*.ko; do \$B insmod \$m; done
\$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /host
for d in proc sys dev; do \$B mount -t \$d \$d /host/\$d 2>/dev/null || \$B mount --bind /\$d /host/\$d; done
\$B mount -t devpts devpts /host/dev/pts 2>/dev/null
\$B mkdir -p /host/dev/shm; \$B mount -t tmpfs shm /host/dev/shm
\$B mount -t tmpfs tmp /host/tmp; \$B mount -t tmpfs run /host/run
\$B mkdir -p /host$(q "$WORKDIR") 2>/dev/null # a directory under /tmp exists only on the host
\$B mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose work /host$(q "$WORKDIR")
\$B cp /guest.sh /host/run/alsa-vm-guest.sh
\$B hostname alsa-vm
\$B chroot /host /bin/sh /run/alsa-vm-guest.sh
\$B sync; \$B poweroff -f
INIT
chmod +x "$WORK/root/init"
if command -v cpio >/dev/null 2>&1; then cpio=(cpio); else cpio=(busybox cpio); fi
(cd "$WORK/root" && find . | "${cpio[@]}" -o -H newc 2>/dev/null | gzip -1) >"$WORK/initrd.gz"

append="console=ttyS0 panic=-1 clocksource=tsc tsc=reliable"
[ -n "${ALSA_VM_CONSOLE:-}" ] || append="$append quiet loglevel=1"
# The command's output: from ALSA_VM_BEGIN on, without the markers (and the line break that
# was added before ALSA_VM_EXIT), or everything with ALSA_VM_CONSOLE=1.
filter='
    !go { if ($0 == "ALSA_VM_BEGIN") go = 1; else if (all) { print; fflush() } next }
    done { if (all) { print; fflush() } next }
    /^ALSA_VM_EXIT=[0-9]+$/ { done = 1; blank = 0; next }
    $0 == "" { if (blank) print ""; blank = 1; fflush(); next }
    { if (blank) print ""; blank = 0; print; fflush() }'
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg -m "$MEM" -smp "$CPUS" -nographic -no-reboot -nic none \
    -kernel "$KERNEL" -initrd "$WORK/initrd.gz" -append "$append" \
    -fsdev local,id=r,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=r,mount_tag=hostroot \
    -fsdev local,id=w,path="$WORKDIR",security_model=none,multidevs=remap \
    -device virtio-9p-pci,fsdev=w,mount_tag=work \
    </dev/null 2>"$WORK/qemu.err" |
    sed -u -e 's/\r//g' -e 's/\x1bc//g' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | tee "$WORK/console.log" |
    awk -v all="${ALSA_VM_CONSOLE:-}" "$filter" || true

code=$(grep -a -o '^ALSA_VM_EXIT=[0-9]*' "$WORK/console.log" | tail -1 | cut -d= -f2 || true)
if [ -z "$code" ]; then
    if grep -q -a '^ALSA_VM_NO_SEQUENCER' "$WORK/console.log"; then
        echo "alsa-vm: no /dev/snd/seq in the VM (kernel $KVER: are snd-seq and snd-virmidi in /lib/modules/$KVER?)" >&2
        grep -a '^alsa-vm: ' "$WORK/console.log" >&2 || true
        exit 2
    fi
    grep -q -a '^ALSA_VM_NO_WORKDIR' "$WORK/console.log" && die "the VM could not enter $WORKDIR"
    {
        echo "alsa-vm: the VM did not finish the command (timeout $TIMEOUT s, crash or boot failure); end of its console:"
        [ -s "$WORK/qemu.err" ] && sed 's/^/  qemu: /' "$WORK/qemu.err"
        tail -n 25 "$WORK/console.log" | sed 's/^/  | /'
    } >&2
    exit 124
fi
exit "$code"
