//! Byte classes of the scanner and the searches over them.
//!
//! Every search answers "the first index at or after `i` whose byte is in class X" (or the
//! input's length). On x86_64 (SSE2, part of its baseline, through `safe_arch`, whose safe
//! wrappers are selected by `#[cfg]`) and on wasm32 built with `simd128` (the page's build,
//! `scripts/dev/build-web.sh`; `core::arch::wasm32`'s intrinsics are safe functions) the searches
//! look at 16 bytes per step, through the few lane operations of `lanes`, so the crate stays
//! `forbid(unsafe_code)`; elsewhere (wasm32 without simd128, thumbv7em, aarch64) they look at
//! 8 bytes per step in plain integer code (SWAR). With 16-byte lanes the fast path's skip of a
//! nested value ([`skip_container`]) classifies 64 bytes at a time into bit masks, as
//! simdjson's first stage does: the quotes' prefix XOR marks the bytes inside strings, and only
//! the brackets outside them are walked.

/// Bytes up to U+0020 (whitespace outside strings).
pub(super) const WS: u8 = 1;
/// Bytes that end a run of plain string content: `"`, `\` and control characters.
pub(super) const STR: u8 = 2;
/// Bytes that matter when skipping a nested value: `"` and the four brackets.
pub(super) const SKIP: u8 = 4;
/// Bytes that end a bareword (number, literal): whitespace, `,`, `:`, `"` and brackets.
pub(super) const DELIM: u8 = 8;

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b <= 0x20 {
        // Outside strings every byte up to U+0020 is whitespace (NUL padding of a cut file,
        // stray control characters); inside strings the control characters are counted.
        t[b] |= WS | DELIM;
        if b < 0x20 {
            t[b] |= STR;
        }
        b += 1;
    }
    t[b'"' as usize] |= STR | SKIP | DELIM;
    t[b'\\' as usize] |= STR;
    t[b'{' as usize] |= SKIP | DELIM;
    t[b'[' as usize] |= SKIP | DELIM;
    t[b'}' as usize] |= SKIP | DELIM;
    t[b']' as usize] |= SKIP | DELIM;
    t[b',' as usize] |= DELIM;
    t[b':' as usize] |= DELIM;
    t
}

/// The classes of each byte value (a set of `WS | STR | SKIP | DELIM` bits).
pub(super) static CLASS: [u8; 256] = classes();

/// Whether byte `b` is a hit of a search for `class` (for `WS`: the first non-whitespace).
#[inline(always)]
fn hit(b: u8, class: u8) -> bool {
    let c = CLASS[b as usize];
    if class == WS {
        c & WS == 0
    } else {
        c & class != 0
    }
}

// SWAR: eight bytes per step in safe code. Each mask has the high bit of a byte set where the
// byte matches; only the lowest set bit is relied on (the borrow tricks are exact there).
const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `i` as a little-endian word (first byte lowest).
#[inline(always)]
pub(super) fn load(s: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&s[i..i + 8]);
    u64::from_le_bytes(w)
}
#[inline(always)]
fn eq(x: u64, b: u8) -> u64 {
    let y = x ^ (LO * u64::from(b));
    y.wrapping_sub(LO) & !y & HI
}
#[inline(always)]
fn lt(x: u64, n: u8) -> u64 {
    x.wrapping_sub(LO * u64::from(n)) & !x & HI
}
/// Exact per byte: bytes above U+0020.
#[inline(always)]
fn above_space(x: u64) -> u64 {
    ((x | HI).wrapping_sub(LO * 0x21) | x) & HI
}
#[inline(always)]
fn mask_of(x: u64, class: u8) -> u64 {
    match class {
        STR => eq(x, b'"') | eq(x, b'\\') | lt(x, 0x20),
        SKIP => {
            let y = x | (LO * 0x20);
            eq(x, b'"') | eq(y, b'{') | eq(y, b'}')
        }
        DELIM => {
            let y = x | (LO * 0x20);
            lt(x, 0x21) | eq(x, b',') | eq(x, b':') | eq(x, b'"') | eq(y, b'{') | eq(y, b'}')
        }
        _ => above_space(x),
    }
}

/// SWAR search: first index at or after `i` whose byte is in `class` (one of STR, SKIP, DELIM;
/// WS means "first non-whitespace"), or `input.len()`.
#[inline(always)]
pub(super) fn find_swar(input: &[u8], mut i: usize, class: u8) -> usize {
    while i + 8 <= input.len() {
        let m = mask_of(load(input, i), class);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < input.len() {
        if hit(input[i], class) {
            return i;
        }
        i += 1;
    }
    input.len()
}

/// The 16-byte lane operations of the searches: SSE2 through `safe_arch` on x86_64.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod lanes {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, m128i, move_mask_i8_m128i,
        set_splat_i8_m128i, sub_saturating_u8_m128i, zeroed_m128i,
    };

    /// 16 bytes.
    pub(super) type V = m128i;

    #[inline(always)]
    pub(super) fn load16(s: &[u8], i: usize) -> V {
        let mut w = [0u8; 16];
        w.copy_from_slice(&s[i..i + 16]);
        load_unaligned_m128i(&w)
    }
    #[inline(always)]
    pub(super) fn splat(b: u8) -> V {
        set_splat_i8_m128i(b as i8)
    }
    #[inline(always)]
    pub(super) fn eq(x: V, b: u8) -> V {
        cmp_eq_mask_i8_m128i(x, splat(b))
    }
    /// Lanes whose unsigned byte is at most `n`.
    #[inline(always)]
    pub(super) fn le(x: V, n: u8) -> V {
        cmp_eq_mask_i8_m128i(sub_saturating_u8_m128i(x, splat(n)), zeroed_m128i())
    }
    #[inline(always)]
    pub(super) fn or(a: V, b: V) -> V {
        bitor_m128i(a, b)
    }
    /// The high bit of each lane, lane k in bit k.
    #[inline(always)]
    pub(super) fn bits(x: V) -> u32 {
        move_mask_i8_m128i(x) as u32
    }
}

/// The 16-byte lane operations of the searches: wasm simd128 (when the build enables it; its
/// intrinsics are safe functions). The load builds the vector from two little-endian words,
/// so it needs no pointer.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod lanes {
    use core::arch::wasm32::{
        u8x16_bitmask, u8x16_eq, u8x16_le, u8x16_splat, u64x2, v128, v128_or,
    };

    /// 16 bytes.
    pub(super) type V = v128;

    #[inline(always)]
    pub(super) fn load16(s: &[u8], i: usize) -> V {
        let s = &s[i..i + 16];
        u64x2(super::load(s, 0), super::load(s, 8))
    }
    #[inline(always)]
    pub(super) fn splat(b: u8) -> V {
        u8x16_splat(b)
    }
    #[inline(always)]
    pub(super) fn eq(x: V, b: u8) -> V {
        u8x16_eq(x, splat(b))
    }
    /// Lanes whose unsigned byte is at most `n`.
    #[inline(always)]
    pub(super) fn le(x: V, n: u8) -> V {
        u8x16_le(x, splat(n))
    }
    #[inline(always)]
    pub(super) fn or(a: V, b: V) -> V {
        v128_or(a, b)
    }
    /// The high bit of each lane, lane k in bit k.
    #[inline(always)]
    pub(super) fn bits(x: V) -> u32 {
        u32::from(u8x16_bitmask(x))
    }
}

/// The 16-byte searches and the 64-byte block masks, over [`lanes`].
#[cfg(any(
    all(target_arch = "x86_64", target_feature = "sse2"),
    all(target_arch = "wasm32", target_feature = "simd128")
))]
mod simd {
    use super::lanes::{V, bits, eq, le, load16, or, splat};
    use super::{DELIM, SKIP, STR};

    /// One bit per byte of the 16 bytes in `x` (bit k for byte k) where the byte is a hit of a
    /// search for `class`.
    #[inline(always)]
    pub(super) fn mask16(x: V, class: u8) -> u32 {
        match class {
            STR => bits(or(or(eq(x, b'"'), eq(x, b'\\')), le(x, 0x1F))),
            SKIP => {
                let y = or(x, splat(0x20));
                bits(or(eq(x, b'"'), or(eq(y, b'{'), eq(y, b'}'))))
            }
            DELIM => {
                let y = or(x, splat(0x20));
                let a = or(le(x, 0x20), eq(x, b'"'));
                let b = or(eq(x, b','), eq(x, b':'));
                let c = or(eq(y, b'{'), eq(y, b'}'));
                bits(or(or(a, b), c))
            }
            _ => !bits(le(x, 0x20)) & 0xFFFF,
        }
    }

    /// Masks of a 64-byte block, one bit per byte.
    pub(super) struct Block {
        /// `"`.
        pub quote: u64,
        /// `\` and control characters: where the string masks stop being exact.
        pub special: u64,
        /// The four brackets.
        pub bracket: u64,
    }

    /// Classifies the 64 bytes at `p` (which must lie inside `s`).
    #[inline(always)]
    pub(super) fn block(s: &[u8], p: usize) -> Block {
        let mut b = Block {
            quote: 0,
            special: 0,
            bracket: 0,
        };
        let mut k = 0;
        while k < 4 {
            let x = load16(s, p + 16 * k);
            // `[`/`]` become `{`/`}`.
            let y = or(x, splat(0x20));
            let sh = 16 * k as u32;
            b.quote |= u64::from(bits(eq(x, b'"'))) << sh;
            b.special |= u64::from(bits(or(eq(x, b'\\'), le(x, 0x1F)))) << sh;
            b.bracket |= u64::from(bits(or(eq(y, b'{'), eq(y, b'}')))) << sh;
            k += 1;
        }
        b
    }
}

/// First index at or after `i` whose byte is in `class` (one of STR, SKIP, DELIM; WS means
/// "first non-whitespace"), or `input.len()`.
#[inline(always)]
pub(super) fn find(input: &[u8], i: usize, class: u8) -> usize {
    #[cfg(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        all(target_arch = "wasm32", target_feature = "simd128")
    ))]
    {
        let mut i = i;
        while i + 16 <= input.len() {
            let m = simd::mask16(lanes::load16(input, i), class);
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 16;
        }
        find_swar(input, i, class)
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        all(target_arch = "wasm32", target_feature = "simd128")
    )))]
    find_swar(input, i, class)
}

/// Fast path: the index after the string whose first content byte is at `j`; `None` at the
/// end of the input or on a raw control character (which the resumable path counts).
#[inline(always)]
pub(super) fn skip_str(s: &[u8], mut j: usize) -> Option<usize> {
    loop {
        let k = find(s, j, STR);
        if k >= s.len() {
            return None;
        }
        match s[k] {
            b'"' => return Some(k + 1),
            b'\\' => {
                if k + 2 > s.len() {
                    return None;
                }
                j = k + 2;
            }
            _ => return None,
        }
    }
}

/// Fast path, from `j` inside an object or array `depth` levels deep (outside any string):
/// the index after the bracket that closes the outermost one, one token at a time. `None` at
/// the end of the input or on a control character inside a string.
#[inline(always)]
pub(super) fn skip_nested_tokens(s: &[u8], mut j: usize, mut depth: usize) -> Option<usize> {
    loop {
        j = find(s, j, SKIP);
        if j >= s.len() {
            return None;
        }
        match s[j] {
            b'"' => j = skip_str(s, j + 1)?,
            b'{' | b'[' => {
                depth += 1;
                j += 1;
            }
            _ => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    return Some(j);
                }
            }
        }
    }
}

/// Fast path: the index after the object or array whose opening bracket is at `i`, with the
/// resumable skipper's rules (brackets balance by kind-blind depth, strings may hold escapes,
/// nothing else is checked). `None` at the end of the input or on a control character inside
/// a string (the resumable path counts it).
#[inline(always)]
pub(super) fn skip_container(s: &[u8], i: usize) -> Option<usize> {
    #[cfg(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        all(target_arch = "wasm32", target_feature = "simd128")
    ))]
    {
        let mut depth = 1usize;
        let mut p = i + 1;
        // All ones while a string is open across the block boundary.
        let mut carry = 0u64;
        while p + 64 <= s.len() {
            let b = simd::block(s, p);
            // Bit k: byte k is inside a string (its opening quote included, closing excluded),
            // exact up to the first escape or control character inside a string.
            let inside = prefix_xor(b.quote) ^ carry;
            let stop = b.special & inside;
            let exact = if stop == 0 {
                u64::MAX
            } else {
                (1u64 << stop.trailing_zeros()) - 1
            };
            let mut brackets = b.bracket & !inside & exact;
            while brackets != 0 {
                let k = brackets.trailing_zeros() as usize;
                // `{` and `[` have bit 1 set, `}` and `]` clear.
                if s[p + k] & 2 != 0 {
                    depth += 1;
                } else {
                    depth -= 1;
                    if depth == 0 {
                        return Some(p + k + 1);
                    }
                }
                brackets &= brackets - 1;
            }
            if stop != 0 {
                // Rare: an escape (or a control character, which makes it `None`) inside a
                // string: on token by token from there.
                let q = skip_str(s, p + stop.trailing_zeros() as usize)?;
                return skip_nested_tokens(s, q, depth);
            }
            carry = ((inside as i64) >> 63) as u64;
            p += 64;
        }
        if carry != 0 {
            p = skip_str(s, p)?;
        }
        skip_nested_tokens(s, p, depth)
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        all(target_arch = "wasm32", target_feature = "simd128")
    )))]
    skip_nested_tokens(s, i + 1, 1)
}

/// Bit k of the result: the XOR of bits 0..=k of `x`.
#[inline(always)]
#[cfg_attr(
    not(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        all(target_arch = "wasm32", target_feature = "simd128")
    )),
    allow(dead_code)
)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

#[cfg(test)]
pub(super) mod test_hooks {
    pub(in crate::json) use super::{
        CLASS, DELIM, SKIP, STR, WS, find, find_swar, skip_container, skip_nested_tokens,
    };
}
