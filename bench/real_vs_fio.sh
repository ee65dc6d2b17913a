#!/usr/bin/env bash
# raidlab's real engine against fio, on the same jobs, in one run.
#
#   bench/real_vs_fio.sh [ROUNDS] [SECONDS]
#
# 4 KB random reads and 4 KB buffered random writes at queue depth 32, both
# tools on io_uring and through the page cache (direct=0) on the same
# files, which are read back into the cache before every run of either tool
# and which fio is told to leave there (--invalidate=0; fio's default drops
# a file from the cache before it starts, so it would read from disk).
# (a) one 1 GiB file; (b) four 256 MiB files: raidlab as raid0 over them,
# fio over the same four files (filename=a:b:c:d, file_service_type=random).
# Then (c) raidlab alone: RAID 5 over the four files, 4 KB random writes with
# --verify against the same without it (its md metadata is always kept).
# The tools alternate ROUNDS times (default 5) for SECONDS each (default 5);
# each measurement is printed, then the median ratio of IOPS.
# Needs fio (apt-get install fio) and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-5}
raidlab=target/release/raidlab
[ -x "$raidlab" ] || cargo build --release -q

dir=$(mktemp -d /tmp/raidlab-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT

head -c $((1 << 30)) /dev/urandom > "$dir/one.img"
for i in 0 1 2 3; do head -c $((256 << 20)) /dev/urandom > "$dir/m$i.img"; done
warm() { cat "$dir"/*.img > /dev/null; }  # into the page cache

fio_iops() { # rw files...
  local rw=$1; shift
  local files; files=$(IFS=:; echo "$*")
  local dirn=read; [ "$rw" = randwrite ] && dirn=write
  warm
  fio --output-format=json --name=bench --ioengine=io_uring --direct=0 --invalidate=0 --rw="$rw" \
      --bs=4k --iodepth=32 --norandommap=1 --randrepeat=0 --time_based=1 --runtime="$secs" \
      --filename="$files" --file_service_type=random 2>/dev/null |
    sed -n '/^{/,$p' | python3 -c "import json,sys; print(round(json.load(sys.stdin)['jobs'][0]['$dirn']['iops']))"
}
raidlab_iops() { # rw topology [options...]
  local rw=$1 topo=$2; shift 2
  # --create: the first run writes md superblocks over the members' random
  # contents (a read run assembles only arrays a run created).
  warm
  "$raidlab" run -t "$topo" --engine io_uring --buffered --create --format json "$@" \
      -w "rw=$rw bs=4k iodepth=32 norandommap=1 runtime=$secs" |
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)["summary"]["iops"]))'
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_case() { # name rw topology files...
  local name=$1 rw=$2 topo=$3; shift 3
  local ratios=()
  for r in $(seq "$rounds"); do
    local a b
    a=$(raidlab_iops "$rw" "$topo")
    b=$(fio_iops "$rw" "$@")
    ratios+=("$(python3 -c "print(f'{$a/$b:.3f}')")")
    echo "$name $rw round $r: raidlab $a IOPS, fio $b IOPS, ratio ${ratios[-1]}"
  done
  echo "$name $rw: median ratio raidlab/fio = $(printf '%s\n' "${ratios[@]}" | median)"
}

raid0="raid0[stripe=64k]($dir/m0.img,$dir/m1.img,$dir/m2.img,$dir/m3.img)"
for rw in randread randwrite; do
  run_case "single file" "$rw" "$dir/one.img" "$dir/one.img"
  run_case "raid0 x 4 files" "$rw" "$raid0" "$dir/m0.img" "$dir/m1.img" "$dir/m2.img" "$dir/m3.img"
done

raid5="raid5[stripe=64k]($dir/m0.img,$dir/m1.img,$dir/m2.img,$dir/m3.img)"
ratios=()
for r in $(seq "$rounds"); do
  a=$(raidlab_iops randwrite "$raid5" --verify)
  b=$(raidlab_iops randwrite "$raid5")
  ratios+=("$(python3 -c "print(f'{$a/$b:.3f}')")")
  echo "raid5 x 4 files randwrite round $r: with --verify $a IOPS, without $b IOPS, ratio ${ratios[-1]}"
done
echo "raid5 x 4 files randwrite: median ratio verify/plain = $(printf '%s\n' "${ratios[@]}" | median)"
