# Sourced by the benchmarks (after setting `root`): `release_binary` sets `binary`, the jambridge they measure, and
# `described`, what it is. With BIN set, that binary; else a release build of this checkout in .build-bench-main.
release_binary() {
    if [ -n "${BIN:-}" ]; then
        binary=$BIN
        described="jambridge $BIN ($("$BIN" --version 2>/dev/null || true))"
    else
        echo "building jambridge (release) in $root/.build-bench-main ..." >&2
        if ! log=$(cd "$root" && swift build -c release --scratch-path "$root/.build-bench-main" --product jambridge 2>&1); then
            echo "$log" | grep -E "error|warning: " >&2 || echo "$log" >&2
            exit 1
        fi
        binary="$root/.build-bench-main/release/jambridge"
        described="jambridge $(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD -- Sources Package.swift || echo ' + uncommitted changes in Sources')"
    fi
    [ -x "$binary" ] || { echo "no jambridge at $binary" >&2; exit 1; }
}
