#!/usr/bin/env bash
# How fast raidlab reads a block trace, against reading the same file.
#
#   bench/trace_parse.sh [MILLIONS]
#
# Writes an Alibaba-format trace of MILLIONS (default 4) million records
# and an MSR one, then times `raidlab trace-stats` (parse + characterise,
# one pass) against `cat FILE` with farm-bench, side by side. Records per
# second = records / raidlab's median wall time. Needs a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
m=${1:-4}
raidlab=target/release/raidlab
[ -x "$raidlab" ] || cargo build --release -q
dir=$(mktemp -d /var/tmp/raidlab-trace.XXXXXX)
trap 'rm -rf "$dir"' EXIT
awk -v n=$((m * 1000000)) 'BEGIN { srand(1); for (i = 0; i < n; i++)
  printf "%d,%s,%.0f,%d,%.0f\n", i % 4, (rand() < 0.7 ? "R" : "W"), int(rand() * 2^28) * 512, 4096 * (1 + int(rand() * 4)), 1577808000000000 + i * 37 }' > "$dir/a.csv"
awk -v n=$((m * 1000000)) 'BEGIN { srand(2); for (i = 0; i < n; i++)
  printf "%.0f,hm,%d,%s,%.0f,%d,%d\n", 128166372000000000 + i * 370, i % 2, (rand() < 0.7 ? "Read" : "Write"), int(rand() * 2^28) * 512, 4096 * (1 + int(rand() * 4)), 1200 }' > "$dir/m.csv"
ls -l "$dir"
for f in a.csv m.csv; do
  echo "== $f: $m million records"
  farm-bench -n 5 --timeout 600 --vs "cat $dir/$f" -- "$raidlab" trace-stats "$dir/$f"
done
