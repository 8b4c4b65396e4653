#!/usr/bin/env bash
# Build kminion (https://github.com/redpanda-data/kminion, formerly cloudhut/kminion) from its public
# source, for the peer mode of bench/lag_collection.py (--kminion PATH).
#
#   bench/kminion/build.sh SOURCE_DIR [OUTPUT]
#
# SOURCE_DIR: a checkout of kminion's repository (its go.mod names github.com/cloudhut/kminion/v2).
# kminion's own module is not served by the Go module proxy, so `go install` cannot fetch it: get
# the source first, e.g.
#   git clone https://github.com/redpanda-data/kminion /tmp/kminion-src
# or, from a bare mirror of it, `git -C MIRROR archive HEAD | tar -x -C /tmp/kminion-src`.
# Its dependencies (franz-go, prometheus client, zap, ...) are ordinary Go modules and come from the
# module proxy. OUTPUT defaults to bench/kminion/kminion (ignored by git).
# Go: $GO, else `go` on the PATH, else /usr/local/go/bin/go.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
source_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
output=${2:-$here/kminion}
go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

if [[ ! -f $source_dir/go.mod ]] || ! grep -q '^module github.com/cloudhut/kminion' "$source_dir/go.mod"; then
  echo "$source_dir is not kminion's source (no go.mod naming github.com/cloudhut/kminion)" >&2
  exit 1
fi
if [[ ! -x $go ]] && ! command -v "$go" >/dev/null; then
  echo "no Go toolchain: set GO=/path/to/go" >&2
  exit 1
fi
revision=$(git -C "$source_dir" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "building kminion ($revision) from $source_dir with $("$go" version) ..." >&2
(cd "$source_dir" && CGO_ENABLED=0 "$go" build -trimpath -o "$output" .)
echo "$output" >&2
