//! A small deterministic generator for the core's randomized unit tests
//! (xorshift64): the same cases on every run, no dependency.

/// `next(n)`: a number below `n`, from a sequence fixed by `seed` (non-zero).
pub(crate) fn below(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = seed;
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    }
}
