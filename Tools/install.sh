#!/usr/bin/env bash
# Installs a release build of `journal` (and `journal-relay`, which it runs for `serve` and
# `join`) into PREFIX/bin.
#   Tools/install.sh                 # into /usr/local/bin as root (or where it may write), else ~/.local/bin
#   Tools/install.sh --prefix ~/.local
#   Tools/install.sh --debug         # the debug build instead (what `swift run` and `swift test` make)
#   Tools/install.sh --no-relay      # journal alone: no SwiftNIO to build; serve and join say how to add it
# The first release build takes minutes (SwiftNIO, swift-crypto); later ones only what changed.
set -euo pipefail
prefix=
configuration=release
relay=yes
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --debug) configuration=debug; shift ;;
        --release) configuration=release; shift ;;
        --no-relay) relay=no; shift ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
cd "$(dirname "$0")/.."
if [ -z "$prefix" ]; then
    # /usr/local needs root on most machines: without it, the user's own ~/.local.
    if [ -w /usr/local/bin ] || { [ ! -e /usr/local/bin ] && [ -w /usr/local ]; }; then prefix=/usr/local
    else
        prefix="$HOME/.local"
        echo "install.sh: /usr/local/bin is not writable by $(id -un): installing into $prefix/bin (--prefix chooses; sudo for /usr/local)"
    fi
fi
products=(journal)
[ "$relay" = yes ] && products+=(journal-relay)
for product in "${products[@]}"; do
    echo "install.sh: building $product ($configuration; the first release build takes several minutes)"
    swift build -c "$configuration" --product "$product"
done
bin=$(swift build -c "$configuration" --show-bin-path)
mkdir -p "$prefix/bin"
for product in "${products[@]}"; do
    install -m 0755 "$bin/$product" "$prefix/bin/$product"
done
echo "installed ${products[*]} into $prefix/bin ($configuration build, $("$prefix/bin/journal" --version))"
case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "note: $prefix/bin is not on your PATH; add it: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
