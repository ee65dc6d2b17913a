//! Parity kernels of the real engine: RAID 5 XOR and RAID 6 P+Q over
//! GF(2^8) (polynomial 0x11d, generator 2, md's conventions — see
//! [`raidlab_layout::gf`], the scalar reference these kernels are tested
//! against).
//!
//! On x86-64 the AVX2 kernels are chosen at run time when the CPU has AVX2;
//! everywhere else a portable kernel works on 64-bit words (eight bytes per
//! operation, the way the Linux kernel's `raid6_int8` does).

/// Which kernel family this CPU runs.
pub fn kernel() -> &'static str {
    if avx2() {
        "avx2"
    } else {
        "scalar"
    }
}

#[inline]
fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const ONES: u64 = 0x0101_0101_0101_0101;

/// Eight GF(2^8) bytes packed in a word, each multiplied by 2.
#[inline]
fn mul2_word(x: u64) -> u64 {
    ((x & LO7) << 1) ^ (((x >> 7) & ONES) * 0x1d)
}

#[inline]
fn word(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// `dst ^= src`.
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "xor_into: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: AVX2 is present (checked just above); the kernel only
        // touches indices below the common length of both slices.
        unsafe { x86::xor_into(dst, src) };
        return;
    }
    xor_into_scalar(dst, src);
}

fn xor_into_scalar(dst: &mut [u8], src: &[u8]) {
    let mut dc = dst.chunks_exact_mut(8);
    let mut sc = src.chunks_exact(8);
    for (d, s) in (&mut dc).zip(&mut sc) {
        let v = word(d, 0) ^ word(s, 0);
        d.copy_from_slice(&v.to_le_bytes());
    }
    for (d, s) in dc.into_remainder().iter_mut().zip(sc.remainder()) {
        *d ^= s;
    }
}

/// RAID 5 parity: `p = data[0] ^ data[1] ^ ...`.
pub fn gen_p(data: &[&[u8]], p: &mut [u8]) {
    p.fill(0);
    for d in data {
        xor_into(p, d);
    }
}

/// RAID 6 syndromes of equally long blocks in syndrome order:
/// `P = Σ D_i`, `Q = Σ g^i · D_i`.
pub fn gen_pq(data: &[&[u8]], p: &mut [u8], q: &mut [u8]) {
    let len = p.len();
    assert_eq!(q.len(), len, "gen_pq: P and Q lengths differ");
    assert!(
        data.iter().all(|d| d.len() == len),
        "gen_pq: data lengths differ from P"
    );
    if data.is_empty() {
        p.fill(0);
        q.fill(0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: AVX2 is present; all blocks were checked to be `len` long.
        unsafe { x86::gen_pq(data, p, q) };
        return;
    }
    gen_pq_scalar(data, p, q, 0);
}

/// Portable P+Q from byte `from` on (Horner's rule from the last block).
fn gen_pq_scalar(data: &[&[u8]], p: &mut [u8], q: &mut [u8], from: usize) {
    let len = p.len();
    let last = data.len() - 1;
    let mut i = from;
    while i + 8 <= len {
        let mut wp = word(data[last], i);
        let mut wq = wp;
        for d in data[..last].iter().rev() {
            let wd = word(d, i);
            wp ^= wd;
            wq = mul2_word(wq) ^ wd;
        }
        p[i..i + 8].copy_from_slice(&wp.to_le_bytes());
        q[i..i + 8].copy_from_slice(&wq.to_le_bytes());
        i += 8;
    }
    for k in i..len {
        let mut bp = data[last][k];
        let mut bq = bp;
        for d in data[..last].iter().rev() {
            bp ^= d[k];
            bq = raidlab_layout::gf::mul(bq, 2) ^ d[k];
        }
        p[k] = bp;
        q[k] = bq;
    }
}

/// `dst ^= c · src` in GF(2^8) (RAID 6 read-modify-write and recovery).
pub fn mul_xor_into(dst: &mut [u8], src: &[u8], c: u8) {
    assert_eq!(dst.len(), src.len(), "mul_xor_into: lengths differ");
    match c {
        0 => {}
        1 => xor_into(dst, src),
        _ => {
            // Products of c with every low and every high nibble: c·x is
            // c·(x & 15) ^ c·(x & 240) since multiplication distributes over ^.
            let mut lo = [0u8; 16];
            let mut hi = [0u8; 16];
            for n in 0..16u8 {
                lo[n as usize] = raidlab_layout::gf::mul(c, n);
                hi[n as usize] = raidlab_layout::gf::mul(c, n << 4);
            }
            #[cfg(target_arch = "x86_64")]
            if avx2() {
                // SAFETY: AVX2 is present; lengths were checked equal.
                unsafe { x86::mul_xor_into(dst, src, &lo, &hi) };
                return;
            }
            for (d, s) in dst.iter_mut().zip(src) {
                *d ^= lo[(s & 15) as usize] ^ hi[(s >> 4) as usize];
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must have AVX2 and `src.len() == dst.len()`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn xor_into(dst: &mut [u8], src: &[u8]) {
        let len = dst.len();
        let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
        let mut i = 0;
        while i + 32 <= len {
            // SAFETY: i + 32 <= len for both slices; unaligned loads/stores.
            unsafe {
                let a = _mm256_loadu_si256(d.add(i) as *const __m256i);
                let b = _mm256_loadu_si256(s.add(i) as *const __m256i);
                _mm256_storeu_si256(d.add(i) as *mut __m256i, _mm256_xor_si256(a, b));
            }
            i += 32;
        }
        for k in i..len {
            dst[k] ^= src[k];
        }
    }

    /// Each byte of `x` times 2 in GF(2^8): shift left, and reduce by 0x1d
    /// where the top bit was set (as the kernel's raid6 AVX2 code does).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn mul2(x: __m256i, poly: __m256i) -> __m256i {
        let top = _mm256_cmpgt_epi8(_mm256_setzero_si256(), x);
        _mm256_xor_si256(_mm256_add_epi8(x, x), _mm256_and_si256(top, poly))
    }

    /// # Safety
    /// The CPU must have AVX2; `data` is non-empty and every block, `p` and
    /// `q` have the same length.
    #[target_feature(enable = "avx2")]
    pub unsafe fn gen_pq(data: &[&[u8]], p: &mut [u8], q: &mut [u8]) {
        let len = p.len();
        let last = data.len() - 1;
        let poly = _mm256_set1_epi8(0x1d);
        let mut i = 0;
        // Two vectors per step for instruction-level parallelism.
        while i + 64 <= len {
            // SAFETY: i + 64 <= len and every block is len bytes long.
            unsafe {
                let ld =
                    |b: &[u8], o: usize| _mm256_loadu_si256(b.as_ptr().add(o) as *const __m256i);
                let mut p0 = ld(data[last], i);
                let mut p1 = ld(data[last], i + 32);
                let (mut q0, mut q1) = (p0, p1);
                for d in data[..last].iter().rev() {
                    let d0 = ld(d, i);
                    let d1 = ld(d, i + 32);
                    p0 = _mm256_xor_si256(p0, d0);
                    p1 = _mm256_xor_si256(p1, d1);
                    q0 = _mm256_xor_si256(mul2(q0, poly), d0);
                    q1 = _mm256_xor_si256(mul2(q1, poly), d1);
                }
                _mm256_storeu_si256(p.as_mut_ptr().add(i) as *mut __m256i, p0);
                _mm256_storeu_si256(p.as_mut_ptr().add(i + 32) as *mut __m256i, p1);
                _mm256_storeu_si256(q.as_mut_ptr().add(i) as *mut __m256i, q0);
                _mm256_storeu_si256(q.as_mut_ptr().add(i + 32) as *mut __m256i, q1);
            }
            i += 64;
        }
        super::gen_pq_scalar(data, p, q, i);
    }

    /// # Safety
    /// The CPU must have AVX2 and `src.len() == dst.len()`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn mul_xor_into(dst: &mut [u8], src: &[u8], lo: &[u8; 16], hi: &[u8; 16]) {
        let len = dst.len();
        // SAFETY: both tables are 16 bytes; broadcast into both 128-bit lanes.
        let (tlo, thi) = unsafe {
            (
                _mm256_broadcastsi128_si256(_mm_loadu_si128(lo.as_ptr() as *const __m128i)),
                _mm256_broadcastsi128_si256(_mm_loadu_si128(hi.as_ptr() as *const __m128i)),
            )
        };
        let mask = _mm256_set1_epi8(0x0f);
        let mut i = 0;
        while i + 32 <= len {
            // SAFETY: i + 32 <= len for both slices.
            unsafe {
                let s = _mm256_loadu_si256(src.as_ptr().add(i) as *const __m256i);
                let l = _mm256_and_si256(s, mask);
                let h = _mm256_and_si256(_mm256_srli_epi64(s, 4), mask);
                let prod =
                    _mm256_xor_si256(_mm256_shuffle_epi8(tlo, l), _mm256_shuffle_epi8(thi, h));
                let d = _mm256_loadu_si256(dst.as_ptr().add(i) as *const __m256i);
                _mm256_storeu_si256(
                    dst.as_mut_ptr().add(i) as *mut __m256i,
                    _mm256_xor_si256(d, prod),
                );
            }
            i += 32;
        }
        for k in i..len {
            dst[k] ^= lo[(src[k] & 15) as usize] ^ hi[(src[k] >> 4) as usize];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_layout::gf;

    fn blocks(n: usize, len: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut r = raidlab_core::rng::Rng::new(seed);
        (0..n)
            .map(|_| (0..len).map(|_| r.below(256) as u8).collect())
            .collect()
    }

    #[test]
    fn kernels_match_the_scalar_reference() {
        // Odd lengths exercise the vector tails.
        for len in [0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 200, 4096, 4099] {
            for n in [1, 2, 3, 8] {
                let d = blocks(n, len, (len * 31 + n) as u64);
                let refs: Vec<&[u8]> = d.iter().map(|v| v.as_slice()).collect();
                let (mut p, mut q) = (vec![0xAA; len], vec![0x55; len]);
                let (mut rp, mut rq) = (vec![0; len], vec![0; len]);
                gen_pq(&refs, &mut p, &mut q);
                gf::gen_pq(&refs, &mut rp, &mut rq);
                assert_eq!((&p, &q), (&rp, &rq), "len {len} n {n}");
                let mut p5 = vec![1; len];
                gen_p(&refs, &mut p5);
                assert_eq!(p5, rp);
                for c in [0u8, 1, 2, 0x1d, 0x80, 0xff] {
                    let mut a = d[0].clone();
                    mul_xor_into(&mut a, &d[n - 1], c);
                    let want: Vec<u8> = d[0]
                        .iter()
                        .zip(&d[n - 1])
                        .map(|(x, y)| x ^ gf::mul(c, *y))
                        .collect();
                    assert_eq!(a, want, "c {c}");
                }
            }
        }
    }

    #[test]
    fn scalar_path_matches_too() {
        let d = blocks(5, 1000, 3);
        let refs: Vec<&[u8]> = d.iter().map(|v| v.as_slice()).collect();
        let (mut p, mut q) = (vec![0; 1000], vec![0; 1000]);
        let (mut rp, mut rq) = (vec![0; 1000], vec![0; 1000]);
        gen_pq_scalar(&refs, &mut p, &mut q, 0);
        gf::gen_pq(&refs, &mut rp, &mut rq);
        assert_eq!((p, q), (rp, rq));
        let mut a = d[0].clone();
        xor_into_scalar(&mut a, &d[1]);
        assert!(a
            .iter()
            .zip(&d[0])
            .zip(&d[1])
            .all(|((a, x), y)| *a == x ^ y));
    }
}
