#!/usr/bin/env bash
# raidlab's real engine against fio, on the same jobs and files, in one run.
#
#   bench/real_vs_fio.sh [ROUNDS] [SECONDS] [CASE...]
#
# 4 KiB random I/O at queue depth 32 per job, both tools on io_uring:
#   direct-1      O_DIRECT reads of one 1 GiB file, 1 job
#   direct-4      the same, 4 jobs
#   raid0-4       O_DIRECT reads, 4 jobs: raidlab's raid0 over four 256 MiB
#                 files against fio over the same four files
#                 (filename=a:b:c:d, file_service_type=random)
#   direct-batch  direct-1 with fio's batching on both sides: 32 I/Os
#                 handed over in one call, and all 32 reaped before the
#                 queue refills (iodepth_batch_submit=32
#                 iodepth_batch_complete_min=32)
#   cached-1      page-cache reads of the 1 GiB file, 1 job (the file read
#                 into the cache first; fio told to leave it there,
#                 --invalidate=0)
#   cached-N      the same with `nproc` jobs
#   shm-1         O_DIRECT reads of a 1 GiB file in /dev/shm, 1 job: memory
#                 behind the same direct I/O path (Linux 6.6 and later take
#                 O_DIRECT on tmpfs), so each tool's cost per I/O decides,
#                 not a disk's; skipped, saying so, where /dev/shm refuses
#                 O_DIRECT
#   shm-N         the same with `nproc` jobs
#   raid5-write   O_DIRECT writes, 4 jobs: raidlab's raid5 over four files
#                 against fio's raw writes to the same four files, inside
#                 the members' data areas (after md's data offset, so the
#                 superblocks and bitmap survive; the stripes' parity does
#                 not, which a benchmark array does not need). A RAID 5
#                 small write is 4 member I/Os (read old data and parity,
#                 write both), so the ratio printed is raidlab's IOPS x 4
#                 over fio's: 1.0 is the member I/O rate fio reaches. Both
#                 tools write the same blocks of the same files: a virtual
#                 disk's host cache favours recently written files, and
#                 separate copies measured fio anywhere from 0.9x to 3x
#                 faster from one run to the next.
#   raid5-mix     the same raidlab run against fio issuing the member I/Os
#                 md's read-modify-write issues, half reads and half
#                 writes (randrw, rwmixread=50) to the same data areas: on
#                 a disk whose writes are cheaper than its reads (a host's
#                 write-back cache) raid5-write cannot reach 1.0, this can.
# The tools alternate ROUNDS times (default 5) for SECONDS each (default 5);
# every measurement is printed, then each case's median ratio. CASEs pick
# some (default all). Needs fio and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-5}
shift $(($# < 2 ? $# : 2))
cases=${*:-direct-1 direct-4 direct-batch raid0-4 cached-1 cached-N shm-1 shm-N raid5-write raid5-mix}
raidlab=target/release/raidlab
[ -x "$raidlab" ] || cargo build --release -q
jobs_n=$(nproc)

dir=$(mktemp -d /var/tmp/raidlab-bench.XXXXXX)
shm=$(mktemp -d /dev/shm/raidlab-bench.XXXXXX 2>/dev/null || true)
trap 'rm -rf "$dir" ${shm:+"$shm"}' EXIT
head -c $((1 << 30)) /dev/urandom > "$dir/one.img"
for i in 0 1 2 3; do head -c $((256 << 20)) /dev/urandom > "$dir/m$i.img"; done
members="$dir/m0.img,$dir/m1.img,$dir/m2.img,$dir/m3.img"
# raidlab's arrays keep md metadata: made once, before any measurement.
"$raidlab" create -t "raid0[stripe=64k]($members)" --assume-clean --force > /dev/null
for i in 0 1 2 3; do head -c $((256 << 20)) /dev/urandom > "$dir/p$i.img"; done
parity="$dir/p0.img,$dir/p1.img,$dir/p2.img,$dir/p3.img"
"$raidlab" create -t "raid5[stripe=64k]($parity)" > /dev/null
# Where each member's data starts and how much there is (md 1.2: the
# superblock and bitmap sit before the data offset, nothing after).
read -r data_off data_len < <("$raidlab" examine "$dir/p0.img" --format json | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["superblock"]
print(s["data_offset_sectors"] * 512, s["used_sectors"] * 512)')
# The files were just written: have the kernel write them back now, or
# the first round's O_DIRECT reads wait for that writeback (and measure it).
sync
warm() { cat "$@" > /dev/null; } # into the page cache
# Read everything once first: below a virtual machine's disk the host may
# cache what was read, and the first tool to read a file would warm it for
# the second.
warm "$dir"/*.img

fio_iops() { # rw direct jobs files... (FIO_EXTRA: more options; FIO_RW: fio's own rw)
  local rw=${FIO_RW:-$1} direct=$2 jobs=$3; shift 3
  local files; files=$(IFS=:; echo "$*")
  [ "$direct" = 1 ] || warm "$@"
  fio --output-format=json --name=bench --ioengine=io_uring --direct="$direct" --invalidate=0 \
      --rw="$rw" --bs=4k --iodepth=32 --numjobs="$jobs" --group_reporting=1 --norandommap=1 \
      --randrepeat=0 --time_based=1 --runtime="$secs" \
      --filename="$files" --file_service_type=random ${FIO_EXTRA:-} 2>/dev/null |
    sed -n '/^{/,$p' | python3 -c "import json,sys; j=json.load(sys.stdin)['jobs'][0]; print(round(j['read']['iops'] + j['write']['iops']))"
}
raidlab_iops() { # rw direct jobs topology
  local rw=$1 direct=$2 jobs=$3 topo=$4
  local buffered=(); [ "$direct" = 1 ] || { buffered=(--buffered); warm "$dir/one.img"; }
  "$raidlab" run -t "$topo" --engine io_uring "${buffered[@]}" --format json \
      -w "rw=$rw bs=4k iodepth=32 numjobs=$jobs norandommap=1 runtime=$secs ${RAIDLAB_EXTRA:-}" |
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)["summary"]["iops"]))'
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
summary=()

run_case() { # name scale rw direct jobs topology files...
  local name=$1 scale=$2 rw=$3 direct=$4 jobs=$5 topo=$6; shift 6
  local ratios=() a b r
  for r in $(seq "$rounds"); do
    # Each tool goes first in every other round.
    if ((r % 2)); then
      a=$(raidlab_iops "$rw" "$direct" "$jobs" "$topo")
      b=$(fio_iops "$rw" "$direct" "$jobs" "$@")
    else
      b=$(fio_iops "$rw" "$direct" "$jobs" "$@")
      a=$(raidlab_iops "$rw" "$direct" "$jobs" "$topo")
    fi
    ratios+=("$(python3 -c "print(f'{$a*$scale/$b:.3f}')")")
    echo "$name round $r: raidlab $a IOPS, fio $b IOPS, ratio ${ratios[-1]}"
  done
  summary+=("$name: median ratio raidlab/fio = $(printf '%s\n' "${ratios[@]}" | median)")
}

one="$dir/one.img"
for c in $cases; do
  case $c in
    direct-1) run_case "$c" 1 randread 1 1 "$one" "$one" ;;
    direct-4) run_case "$c" 1 randread 1 4 "$one" "$one" ;;
    direct-batch) FIO_EXTRA="--iodepth_batch_submit=32 --iodepth_batch_complete_min=32" \
      RAIDLAB_EXTRA="iodepth_batch_submit=32 iodepth_batch_complete_min=32" \
      run_case "$c" 1 randread 1 1 "$one" "$one" ;;
    raid0-4) run_case "$c" 1 randread 1 4 "raid0[stripe=64k]($members)" \
      "$dir/m0.img" "$dir/m1.img" "$dir/m2.img" "$dir/m3.img" ;;
    cached-1) run_case "$c" 1 randread 0 1 "$one" "$one" ;;
    cached-N) run_case "cached-$jobs_n" 1 randread 0 "$jobs_n" "$one" "$one" ;;
    shm-1 | shm-N)
      n=1; [ "$c" = shm-N ] && n=$jobs_n
      if [ -n "$shm" ] && { [ -f "$shm/one.img" ] || head -c $((1 << 30)) /dev/zero > "$shm/one.img"; } &&
        dd if="$shm/one.img" of=/dev/null bs=4k count=1 iflag=direct 2> /dev/null; then
        run_case "shm-$n" 1 randread 1 "$n" "$shm/one.img" "$shm/one.img"
      else
        summary+=("shm-$n: skipped: /dev/shm is missing, full, or refuses O_DIRECT")
      fi ;;
    raid5-write) FIO_EXTRA="--offset=$data_off --filesize=$data_len" \
      run_case "$c (x4 member I/Os)" 4 randwrite 1 4 "raid5[stripe=64k]($parity)" \
      "$dir/p0.img" "$dir/p1.img" "$dir/p2.img" "$dir/p3.img" ;;
    raid5-mix) FIO_EXTRA="--offset=$data_off --filesize=$data_len --rwmixread=50" FIO_RW=randrw \
      run_case "$c (x4 member I/Os vs fio's 50/50 mix)" 4 randwrite 1 4 "raid5[stripe=64k]($parity)" \
      "$dir/p0.img" "$dir/p1.img" "$dir/p2.img" "$dir/p3.img" ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done
echo "machine: $(nproc) cores, $(uname -r), $(fio --version)"
printf '%s\n' "${summary[@]}"
