#!/usr/bin/env bash
# raidlab's real engine against fio, on the same job, in one run.
#
#   bench/real_vs_fio.sh [ROUNDS] [SECONDS]
#
# 4 KB random reads at queue depth 32 (io_uring, page cache), (a) on one
# page-cached 1 GiB file, (b) on four page-cached 256 MiB files: raidlab as
# raid0 over them, fio over the same four files (filename=a:b:c:d). The two
# tools alternate ROUNDS times (default 3) for SECONDS each (default 5); the
# script prints each measurement and the median ratio raidlab/fio of IOPS.
# Needs fio (apt-get install fio) and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
raidlab=target/release/raidlab
[ -x "$raidlab" ] || cargo build --release -q
command -v fio >/dev/null || { echo "fio is required: apt-get install fio"; exit 1; }
dir=$(mktemp -d /tmp/raidlab-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT

head -c $((1 << 30)) /dev/urandom > "$dir/one.img"
for i in 0 1 2 3; do head -c $((256 << 20)) /dev/urandom > "$dir/m$i.img"; done
cat "$dir"/*.img > /dev/null  # into the page cache

fio_iops() { # files...
  local files; files=$(IFS=:; echo "$*")
  fio --output-format=json --name=bench --ioengine=io_uring --direct=0 --rw=randread \
      --bs=4k --iodepth=32 --norandommap=1 --randrepeat=0 --time_based=1 --runtime="$secs" \
      --filename="$files" --file_service_type=random 2>/dev/null |
    sed -n '/^{/,$p' | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}
raidlab_iops() { # topology
  # --create: the first run writes md superblocks over the members' random
  # contents (a read run assembles only arrays a run created).
  "$raidlab" run -t "$1" --engine io_uring --buffered --create --format json \
      -w "rw=randread bs=4k iodepth=32 runtime=$secs" |
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)["summary"]["iops"]))'
}

run_case() { # name topology files...
  local name=$1 topo=$2; shift 2
  local ratios=()
  for r in $(seq "$rounds"); do
    local a b
    a=$(raidlab_iops "$topo")
    b=$(fio_iops "$@")
    ratios+=("$(python3 -c "print(f'{$a/$b:.3f}')")")
    echo "$name round $r: raidlab $a IOPS, fio $b IOPS, ratio ${ratios[-1]}"
  done
  printf '%s\n' "${ratios[@]}" | sort -n | awk -v n="$name" '{a[NR]=$1} END {print n ": median ratio raidlab/fio = " a[int((NR+1)/2)]}'
}

run_case "single file" "$dir/one.img" "$dir/one.img"
run_case "raid0 x 4 files" "raid0[stripe=64k]($dir/m0.img,$dir/m1.img,$dir/m2.img,$dir/m3.img)" \
  "$dir/m0.img" "$dir/m1.img" "$dir/m2.img" "$dir/m3.img"
