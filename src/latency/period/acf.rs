//! Autocorrelation of a series by FFT, for the period detector: r(k) for every lag at once in
//! O(n log n).

/// r(k) for k in 0..n (the biased estimator, r(0) = 1); empty for a constant series.
pub fn autocorrelation(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let size = (2 * n).next_power_of_two();
    let mut buf: Vec<(f64, f64)> = x.iter().map(|v| (v - mean, 0.0)).collect();
    buf.resize(size, (0.0, 0.0));
    fft(&mut buf, false);
    for c in &mut buf {
        *c = (c.0 * c.0 + c.1 * c.1, 0.0);
    }
    fft(&mut buf, true);
    let r0 = buf[0].0;
    if r0 <= f64::EPSILON * n as f64 {
        return vec![];
    }
    buf[..n].iter().map(|c| c.0 / r0).collect()
}

/// In-place iterative radix-2 FFT (Cooley-Tukey); `inverse` also divides by the length.
fn fft(a: &mut [(f64, f64)], inverse: bool) {
    let n = a.len();
    debug_assert!(n.is_power_of_two());
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            a.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let ang = 2.0 * std::f64::consts::PI / len as f64 * if inverse { 1.0 } else { -1.0 };
        let (wr, wi) = (ang.cos(), ang.sin());
        for start in (0..n).step_by(len) {
            let (mut cr, mut ci) = (1.0, 0.0);
            for k in 0..len / 2 {
                let (ur, ui) = a[start + k];
                let (vr0, vi0) = a[start + k + len / 2];
                let (vr, vi) = (vr0 * cr - vi0 * ci, vr0 * ci + vi0 * cr);
                a[start + k] = (ur + vr, ui + vi);
                a[start + k + len / 2] = (ur - vr, ui - vi);
                (cr, ci) = (cr * wr - ci * wi, cr * wi + ci * wr);
            }
        }
        len <<= 1;
    }
    if inverse {
        for c in a.iter_mut() {
            *c = (c.0 / n as f64, c.1 / n as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fft_autocorrelation_equals_the_direct_sum(xs in prop::collection::vec(0.0f64..1000.0, 2..80)) {
            let n = xs.len();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let d: Vec<f64> = xs.iter().map(|v| v - mean).collect();
            let r0: f64 = d.iter().map(|v| v * v).sum();
            prop_assume!(r0 > 1e-6);
            let r = autocorrelation(&xs);
            for k in 0..n {
                let direct: f64 = (0..n - k).map(|i| d[i] * d[i + k]).sum::<f64>() / r0;
                prop_assert!((r[k] - direct).abs() < 1e-9, "lag {}: {} vs {}", k, r[k], direct);
            }
        }
    }
}
