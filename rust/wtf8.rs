//! Decoding of generalized UTF-8 (UTF-8 plus encoded lone surrogates).

/// Decodes the code point at the start of `bytes`.
///
/// Returns the scalar value (a surrogate comes back as its own value in
/// `0xD800..=0xDFFF`) and the number of bytes it took. A byte that starts no
/// well-formed sequence comes back as `None` with length 1, so a caller can copy
/// it through untouched instead of inventing a replacement character.
pub fn decode(bytes: &[u8]) -> (Option<u32>, usize) {
    let Some(&b0) = bytes.first() else {
        return (None, 0);
    };
    let (len, init) = match b0 {
        0x00..=0x7F => return (Some(u32::from(b0)), 1),
        0xC2..=0xDF => (2, u32::from(b0 & 0x1F)),
        0xE0..=0xEF => (3, u32::from(b0 & 0x0F)),
        0xF0..=0xF4 => (4, u32::from(b0 & 0x07)),
        _ => return (None, 1),
    };
    if bytes.len() < len {
        return (None, 1);
    }
    let mut cp = init;
    for &b in &bytes[1..len] {
        if b & 0xC0 != 0x80 {
            return (None, 1);
        }
        cp = (cp << 6) | u32::from(b & 0x3F);
    }
    let min = match len {
        2 => 0x80,
        3 => 0x800,
        _ => 0x1_0000,
    };
    if cp < min || cp > 0x10_FFFF {
        return (None, 1);
    }
    (Some(cp), len)
}

/// Appends the generalized UTF-8 encoding of `cp` (which may be a surrogate).
pub fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7F => out.push(cp as u8),
        0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
        0x800..=0xFFFF => out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
        _ => out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(cp: u32) -> bool {
        let mut buf = Vec::new();
        push_code_point(&mut buf, cp);
        decode(&buf) == (Some(cp), buf.len())
    }

    macro_rules! decodes {
        ($($name:ident: $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() { assert_eq!(decode($input), $want); }
        )*};
    }

    decodes! {
        ascii: b"a" => (Some(0x61), 1);
        nul: b"\0" => (Some(0), 1);
        two_bytes: "é".as_bytes() => (Some(0xE9), 2);
        three_bytes: "€".as_bytes() => (Some(0x20AC), 3);
        four_bytes: "😀".as_bytes() => (Some(0x1F600), 4);
        lone_high_surrogate: b"\xED\xA0\x80" => (Some(0xD800), 3);
        lone_low_surrogate: b"\xED\xBF\xBF" => (Some(0xDFFF), 3);
        bare_continuation: b"\x80" => (None, 1);
        truncated: b"\xE2\x82" => (None, 1);
        overlong: b"\xC0\xAF" => (None, 1);
        empty: b"" => (None, 0);
    }

    #[test]
    fn every_code_point_round_trips() {
        assert!((0..=0x10_FFFF).all(round_trip));
    }
}
