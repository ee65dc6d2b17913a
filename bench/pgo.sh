#!/usr/bin/env bash
# Profile-guided (PGO) build of raidlab and of the simulator speed benchmark.
#
#   bench/pgo.sh              build target/pgo/use/release/raidlab
#   bench/pgo.sh bench [F]    the same, then run the speed benchmark built
#                             the same way (criterion; F filters, e.g. b_raid5)
#
# Training run: the README's main job, `raidlab reproduce` (every built-in
# document: SSDs, disks, controllers, md, all RAID levels, reads and writes),
# not the benchmark's two scenarios. The simulator's results do not change:
# PGO only moves code (branch layout, inlining), and the output is the same
# byte for byte. Needs rustup's llvm-tools (installed if missing); takes two
# release builds (about 7 minutes on 2 cores) and the training run (~30 s).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-build}
filter=${2:-}
case "$mode" in
  build | bench) ;;
  *) echo "usage: bench/pgo.sh [build | bench [FILTER]]" >&2; exit 2 ;;
esac

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || rustup component add llvm-tools
dir=$PWD/target/pgo
rm -rf "$dir/raw"
mkdir -p "$dir/raw"

# Both builds take the same packages and targets: cargo hashes the feature
# set into every crate's symbol names, and the profile is matched by them, so
# a different selection would leave the benchmark's copy of the simulator
# without a profile.
sel=(--profile bench -p raidlab -p raidlab-sim --bins --benches)

RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$dir/raw" \
  cargo build "${sel[@]}" --target-dir "$dir/gen"
LLVM_PROFILE_FILE="$dir/raw/%m.profraw" "$dir/gen/release/raidlab" reproduce > /dev/null
"$profdata" merge -o "$dir/raidlab.profdata" "$dir/raw"

RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$dir/raidlab.profdata" \
  cargo build "${sel[@]}" --target-dir "$dir/use" --message-format=json-render-diagnostics \
  > "$dir/use.json"
echo "PGO build: $dir/use/release/raidlab"

if [ "$mode" = bench ]; then
  bench=$(grep -o '"executable":"[^"]*/deps/sim-[^"]*"' "$dir/use.json" | tail -1 | cut -d'"' -f4)
  [ -x "$bench" ] || { echo "speed benchmark executable not found in $dir/use.json"; exit 1; }
  "$bench" --bench ${filter:+"$filter"}
fi
