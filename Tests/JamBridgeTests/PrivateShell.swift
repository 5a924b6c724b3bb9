import Foundation
import Testing

/// Runs `script` with `sh` as a user types it, with the built `jambridge` first on `PATH`, in `directory`, inside
/// namespaces of its own (root only): a network with nothing but loopback (ports and peers of other tests are not
/// there), an empty `/run/jambridge` (no other daemon's control socket is found, as the commands find sockets there
/// whatever the environment says) and processes of its own, every one of them ended when the script ends (a daemon it
/// left in the background too). Returns its exit status, standard output and standard error; killed after `seconds`.
func privateShell(_ script: String, in directory: URL, seconds: Double = 60) throws -> (status: Int32, out: String, err: String) {
    try #require(getuid() == 0, "namespaces of its own need root")
    try? FileManager.default.createDirectory(atPath: "/run/jambridge", withIntermediateDirectories: true) // else the mount says why
    let setUp = """
        ip link set lo up && mount -t tmpfs -o mode=0755 tmpfs /run/jambridge || exit 99
        unset RUNTIME_DIRECTORY XDG_RUNTIME_DIR NOTIFY_SOCKET JOURNAL_STREAM
        export PATH="$1:$PATH"
        cd "$2" || exit 99
        """
    let shell = try JamBridgeProcess(
        ["--mount", "--net", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c", setUp + "\n" + script, "sh",
         executable.deletingLastPathComponent().path, directory.path],
        launcher: "/usr/bin/unshare")
    return shell.finish(killingAfter: seconds)
}
