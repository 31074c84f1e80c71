//! numpy's default (`linear`) percentile, bit for bit.

/// numpy's `_lerp(a, b, t)` for scalars: `a + (b - a) * t` below one half, `b - (b - a) * (1 - t)`
/// from one half on. Written without fused multiply-add so results are bit-identical.
pub fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// numpy-linear percentile of `n` sorted values read through `at(i)` (as f64): `h = (n - 1) * q`,
/// then [`lerp`] between ranks `floor(h)` and `floor(h) + 1`. `None` when `n == 0`.
/// `q` must lie in `[0, 1]`.
pub fn percentile_linear_by(n: usize, q: f64, at: impl Fn(usize) -> f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q;
    if h >= (n - 1) as f64 {
        return Some(at(n - 1));
    }
    // h >= 0, so truncation is floor.
    let lo = h as usize;
    Some(lerp(at(lo), at(lo + 1), h - lo as f64))
}

/// numpy-linear percentile of a sorted slice. `None` when empty.
pub fn percentile_linear(sorted: &[f64], q: f64) -> Option<f64> {
    percentile_linear_by(sorted.len(), q, |i| sorted[i])
}
