//! Parity kernels in GB/s of data per core: RAID 5 XOR and RAID 6 P+Q
//! generation over 8 data members, 64 KiB chunks (the default stripe unit).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use raidlab_io::parity;
use std::hint::black_box;

fn benches(c: &mut Criterion) {
    const N: usize = 8;
    const CHUNK: usize = 64 * 1024;
    let mut r = raidlab_core::rng::Rng::new(1);
    let data: Vec<Vec<u8>> = (0..N)
        .map(|_| (0..CHUNK).map(|_| r.next_u64() as u8).collect())
        .collect();
    let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
    let (mut p, mut q) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let mut g = c.benchmark_group(format!("parity_{}_8x64k", parity::kernel()));
    g.throughput(Throughput::Bytes((N * CHUNK) as u64));
    g.bench_function("raid5_xor", |b| {
        b.iter(|| parity::gen_p(black_box(&refs), black_box(&mut p)))
    });
    g.bench_function("raid6_pq", |b| {
        b.iter(|| parity::gen_pq(black_box(&refs), black_box(&mut p), black_box(&mut q)))
    });
    g.finish();
    // A read-modify-write Q update touches one chunk of data, not the
    // group's eight: its throughput is one chunk per operation.
    let mut g = c.benchmark_group(format!("parity_{}_1x64k", parity::kernel()));
    g.throughput(Throughput::Bytes(CHUNK as u64));
    g.bench_function("raid6_rmw_q_update", |b| {
        b.iter(|| parity::mul_xor_into(black_box(&mut q), black_box(&data[0]), 0x8e))
    });
    g.finish();
}

criterion_group!(parity_benches, benches);
criterion_main!(parity_benches);
