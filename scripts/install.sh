#!/usr/bin/env bash
# Installs jambridge, or removes what an install put in place; `make install` and `make uninstall` run it.
#   scripts/install.sh install BINARY
#   scripts/install.sh uninstall
# Environment: PREFIX (default /usr/local), DESTDIR (a staging root, default none), SYSCONFDIR (default /etc).
#
# Install puts BINARY in PREFIX/bin; every page in man/ in PREFIX/share/man/manN; routes/ (the examples and their
# songs) in PREFIX/share/jambridge/routes; the systemd unit, with its paths to this PREFIX and SYSCONFDIR, in
# PREFIX/lib/systemd/system; bash, zsh and fish completions (from BINARY --generate-completion-script) where each
# shell looks under PREFIX/share; and routes/rack.yaml as SYSCONFDIR/jambridge/routes.yaml unless that exists.
# Every file and every directory it creates is listed in PREFIX/share/jambridge/installed-files (the paths
# without DESTDIR; a second install adds to the list). Uninstall removes the files listed, the default routes.yaml
# only if it is unchanged (an edited one is kept, and said so), then the directories listed that are empty.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=${PREFIX:-/usr/local}
destdir=${DESTDIR:-}
sysconfdir=${SYSCONFDIR:-/etc}
manifest=$prefix/share/jambridge/installed-files
config=$sysconfdir/jambridge/routes.yaml

die() { echo "install.sh: $*" >&2; exit 1; }

[ "${prefix:0:1}" = / ] && [ "${sysconfdir:0:1}" = / ] || die "PREFIX and SYSCONFDIR are absolute paths"

# What this install created, one "file PATH", "dir PATH" or "config SHA256 PATH" a line (PATH without DESTDIR).
entries=()

# mkdir -p of DESTDIR+$1, listing each directory it creates (parents first).
make_directory() {
    local dir=$1 missing=()
    while [ "$dir" != / ] && [ ! -d "$destdir$dir" ]; do
        missing=("$dir" "${missing[@]}")
        dir=$(dirname "$dir")
    done
    for dir in "${missing[@]}"; do
        mkdir -m 755 "$destdir$dir"
        entries+=("dir $dir")
    done
}

# put MODE SOURCE PATH: SOURCE installed as DESTDIR+PATH.
put() {
    make_directory "$(dirname "$3")"
    install -m "$1" "$2" "$destdir$3"
    entries+=("file $3")
}

install_all() {
    local binary=$1 page section file shell
    [ -x "$binary" ] || die "no jambridge at $binary: run make first (or give BINARY=PATH)"
    [ -z "$destdir" ] || mkdir -p "$destdir"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT

    put 755 "$binary" "$prefix/bin/jambridge"
    for page in man/*.[1-8]; do
        section=${page##*.}
        put 644 "$page" "$prefix/share/man/man$section/${page##*/}"
    done
    for file in routes/*.yaml routes/README.md routes/songs/*; do
        put 644 "$file" "$prefix/share/jambridge/$file"
    done
    sed -e "s|/usr/local/bin/jambridge|$prefix/bin/jambridge|g" -e "s|/etc/jambridge/|$sysconfdir/jambridge/|g" \
        dist/jambridge.service >"$work/jambridge.service"
    put 644 "$work/jambridge.service" "$prefix/lib/systemd/system/jambridge.service"
    for shell in bash zsh fish; do
        "$binary" --generate-completion-script "$shell" >"$work/$shell"
        [ -s "$work/$shell" ] || die "$binary made no $shell completion script"
    done
    put 644 "$work/bash" "$prefix/share/bash-completion/completions/jambridge"
    put 644 "$work/zsh" "$prefix/share/zsh/site-functions/_jambridge"
    put 644 "$work/fish" "$prefix/share/fish/vendor_completions.d/jambridge.fish"

    if [ -e "$destdir$config" ]; then
        echo "install.sh: kept the existing $destdir$config"
    else
        make_directory "$(dirname "$config")"
        install -m 644 routes/rack.yaml "$destdir$config"
        entries+=("config $(sha256sum <"$destdir$config" | cut -d' ' -f1) $config")
    fi

    make_directory "$(dirname "$manifest")"
    {
        [ ! -e "$destdir$manifest" ] || cat "$destdir$manifest"
        printf '%s\n' "${entries[@]}"
    } | awk '!seen[$0]++' >"$work/installed-files"
    install -m 644 "$work/installed-files" "$destdir$manifest"
    echo "install.sh: installed jambridge in $destdir$prefix (the list: $destdir$manifest)"
}

uninstall_all() {
    local kind rest path sum dirs=()
    [ -f "$destdir$manifest" ] || die "no $destdir$manifest: nothing was installed with PREFIX=$prefix DESTDIR=$destdir"
    while read -r kind rest; do
        case $kind in
            file) rm -f "$destdir$rest" ;;
            config)
                sum=${rest%% *} path=${rest#* }
                if [ ! -e "$destdir$path" ]; then
                    :
                elif [ "$(sha256sum <"$destdir$path" | cut -d' ' -f1)" = "$sum" ]; then
                    rm -f "$destdir$path"
                else
                    echo "install.sh: kept $destdir$path: it was changed after the install"
                fi
                ;;
            dir) dirs=("$rest" "${dirs[@]}") ;;
            *) die "$destdir$manifest: cannot read the line '$kind $rest'" ;;
        esac
    done <"$destdir$manifest"
    rm -f "$destdir$manifest"
    # Children before their parents: the list has parents first.
    for path in "${dirs[@]}"; do
        [ ! -d "$destdir$path" ] || rmdir "$destdir$path" 2>/dev/null ||
            echo "install.sh: kept $destdir$path: it is not empty"
    done
    echo "install.sh: removed jambridge from $destdir$prefix"
}

case "${1:-}" in
    install) [ $# -eq 2 ] || die "usage: $0 install BINARY"; install_all "$2" ;;
    uninstall) uninstall_all ;;
    *) die "usage: $0 install BINARY | uninstall" ;;
esac
