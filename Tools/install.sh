#!/usr/bin/env bash
# Builds the release `journal` binary and installs it as PREFIX/bin/journal.
#   Tools/install.sh                 # into /usr/local/bin (needs write access there)
#   Tools/install.sh --prefix ~/.local
#   Tools/install.sh --debug         # the debug build instead (quick; what CI uses)
set -euo pipefail
prefix=/usr/local
configuration=release
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --debug) configuration=debug; shift ;;
        -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
cd "$(dirname "$0")/.."
swift build -c "$configuration" --product journal
bin=$(swift build -c "$configuration" --show-bin-path)
mkdir -p "$prefix/bin"
install -m 0755 "$bin/journal" "$prefix/bin/journal"
echo "installed $prefix/bin/journal ($("$prefix/bin/journal" --version))"
case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "note: $prefix/bin is not on your PATH; add it: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
