//! GF(2^8) arithmetic with md's RAID 6 conventions: polynomial
//! x^8 + x^4 + x^3 + x^2 + 1 (0x11d), generator g = 2, Q = Σ g^i · D_i.
//!
//! Scalar reference code; the real engine adds SIMD kernels checked against it.

const fn build_tables() -> ([u8; 256], [u8; 512]) {
    let mut log = [0u8; 256];
    let mut exp = [0u8; 512];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        exp[i + 255] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= 0x11d;
        }
        i += 1;
    }
    exp[510] = exp[0];
    exp[511] = exp[1];
    (log, exp)
}

const TABLES: ([u8; 256], [u8; 512]) = build_tables();
const LOG: [u8; 256] = TABLES.0;
const EXP: [u8; 512] = TABLES.1;

/// g^i.
#[inline]
pub fn pow2(i: usize) -> u8 {
    EXP[i % 255]
}

/// a · b in GF(2^8).
#[inline]
pub fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
    }
}

/// The discrete logarithm of a ≠ 0 to base g: log(g^i) = i.
#[inline]
pub fn log(a: u8) -> u8 {
    debug_assert!(a != 0);
    LOG[a as usize]
}

/// Multiplicative inverse (a ≠ 0).
#[inline]
pub fn inv(a: u8) -> u8 {
    debug_assert!(a != 0);
    EXP[255 - LOG[a as usize] as usize]
}

/// P (XOR) and Q (Σ g^i · D_i) of equally long data blocks, in syndrome order.
pub fn gen_pq(data: &[&[u8]], p: &mut [u8], q: &mut [u8]) {
    p.fill(0);
    q.fill(0);
    // Horner from the highest index: Q = ((D_{n-1}·g + D_{n-2})·g + ...) + D_0.
    for d in data.iter().rev() {
        for i in 0..p.len() {
            p[i] ^= d[i];
            q[i] = mul(q[i], 2) ^ d[i];
        }
    }
}

/// P alone (RAID 5).
pub fn gen_p(data: &[&[u8]], p: &mut [u8]) {
    p.fill(0);
    for d in data {
        for (x, y) in p.iter_mut().zip(d.iter()) {
            *x ^= y;
        }
    }
}

/// Rebuild data blocks `x` and `y` (x < y, syndrome indices) from the other
/// data blocks and P, Q. `data[x]` and `data[y]` are overwritten.
pub fn recover_two(data: &mut [Vec<u8>], x: usize, y: usize, p: &[u8], q: &[u8]) {
    assert!(x < y && y < data.len());
    let len = p.len();
    // Pxy = P ^ Σ_{i≠x,y} D_i ; Qxy = Q ^ Σ_{i≠x,y} g^i D_i
    let mut pxy = p.to_vec();
    let mut qxy = q.to_vec();
    for (i, d) in data.iter().enumerate() {
        if i == x || i == y {
            continue;
        }
        let c = pow2(i);
        for k in 0..len {
            pxy[k] ^= d[k];
            qxy[k] ^= mul(c, d[k]);
        }
    }
    // D_x = (g^{y-x} · Pxy ^ g^{-x} · Qxy) / (g^{y-x} ^ 1) ; D_y = Pxy ^ D_x
    let gyx = pow2(y - x);
    let denom_inv = inv(gyx ^ 1);
    let gx_inv = inv(pow2(x));
    for k in 0..len {
        let dx = mul(denom_inv, mul(gyx, pxy[k]) ^ mul(gx_inv, qxy[k]));
        data[x][k] = dx;
        data[y][k] = pxy[k] ^ dx;
    }
}

/// Rebuild data block `x` and P from the other data blocks and Q.
pub fn recover_data_with_q(data: &mut [Vec<u8>], x: usize, q: &[u8]) -> Vec<u8> {
    let len = q.len();
    let mut qx = q.to_vec();
    for (i, d) in data.iter().enumerate() {
        if i != x {
            let c = pow2(i);
            for k in 0..len {
                qx[k] ^= mul(c, d[k]);
            }
        }
    }
    let gi = inv(pow2(x));
    for k in 0..len {
        data[x][k] = mul(gi, qx[k]);
    }
    let refs: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
    let mut p = vec![0; len];
    gen_p(&refs, &mut p);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_axioms_on_samples() {
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a)), 1);
            assert_eq!(mul(a, 1), a);
        }
        assert_eq!(pow2(8), 0x1d, "x^8 = x^4+x^3+x^2+1 under 0x11d");
        assert_eq!(mul(0x80, 2), 0x1d);
    }
}
