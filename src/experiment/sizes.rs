//! Why a size is refused, with the nearest sizes that would be accepted: a `size` that is no
//! whole number of blocks, a `bs` larger than `size`, a `bs` that O_DIRECT cannot use.

use crate::units::{fmt_size, fmt_size_spec, nearest_multiples, round_divisor};

/// A size as the spec reads it, in the round unit it is a whole number of: `64KiB`, `1MB`.
fn round_size(n: u64) -> String {
    let binary = fmt_size_spec(n);
    if binary.parse::<u64>().is_err() {
        return binary;
    }
    for (name, unit) in [("TB", 1_000_000_000_000u64), ("GB", 1_000_000_000), ("MB", 1_000_000), ("kB", 1000)]
    {
        if n >= unit && n % unit == 0 {
            return format!("{}{name}", n / unit);
        }
    }
    binary
}

/// `size` (bytes) is not a whole number of blocks of `bs`: the nearest sizes that are, and a
/// round block size that divides it.
pub(super) fn not_whole_blocks(size: u64, bs: u64) -> String {
    let mut why = format!(
        "{size} bytes is not a whole number of blocks (bs = {}): the nearest sizes that are: {}",
        fmt_size(bs),
        nearest_multiples(size, bs)
    );
    if let Some(d) = round_divisor(size, bs) {
        why += &format!("; or a bs that divides it, such as {}", round_size(d));
    }
    why
}

/// `bs` is larger than `size`: the bs that fits, or the size that would.
pub(super) fn bs_above_size(size: u64, bs: u64) -> String {
    format!(
        "larger than size ({}): give a bs of at most {} or a size of at least {}",
        fmt_size(size),
        round_size(round_divisor(size, size).unwrap_or(size)),
        fmt_size_spec(bs)
    )
}

/// `bs` is no multiple of the O_DIRECT alignment `align`: the nearest that are.
pub(super) fn unaligned_bs(bs: u64, align: u64) -> String {
    format!(
        "O_DIRECT needs bs to be a multiple of {align} bytes on this file system: {} would do",
        nearest_multiples(bs, align)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_sizes_that_would_do() {
        assert_eq!(
            not_whole_blocks(1_000_000_000, 1 << 20),
            "1000000000 bytes is not a whole number of blocks (bs = 1 MiB): the nearest sizes that are: 953MiB or 954MiB; or a bs that divides it, such as 1MB"
        );
        assert_eq!(
            bs_above_size(64 << 10, 1 << 20),
            "larger than size (64 KiB): give a bs of at most 64KiB or a size of at least 1MiB"
        );
    }
}
