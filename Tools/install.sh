#!/usr/bin/env bash
# Installs `journal` (and `journal-relay`, which it runs for `serve` and `join`) into PREFIX/bin.
#   Tools/install.sh                 # into /usr/local/bin, reusing the build that exists
#   Tools/install.sh --prefix ~/.local
#   Tools/install.sh --release       # a release build (fast on big journals; longer to build)
#   Tools/install.sh --debug         # the debug build (what `swift run` and `swift test` make)
#   Tools/install.sh --no-relay      # journal alone: no SwiftNIO to build; serve and join say how to add it
# Without --release or --debug it installs the build already in .build (release if both exist),
# else builds release.
set -euo pipefail
prefix=/usr/local
configuration=
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
if [ -z "$configuration" ]; then
    if [ -x "$(swift build -c release --show-bin-path)/journal" ]; then configuration=release
    elif [ -x "$(swift build -c debug --show-bin-path)/journal" ]; then
        configuration=debug
        echo "install.sh: installing the debug build that exists (Tools/install.sh --release builds a faster one)"
    else configuration=release
    fi
fi
products=(journal)
[ "$relay" = yes ] && products+=(journal-relay)
for product in "${products[@]}"; do
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
