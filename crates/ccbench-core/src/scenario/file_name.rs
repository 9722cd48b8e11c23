//! Ids as file names. A link id is any string, but `--pcap LINK` writes
//! `LINK.pcap` into the result directory: an id such as
//! `"../../escaped"` or `"/tmp/x"` must not name a file elsewhere. Letters,
//! digits, `_`, `-` and `.` (not first) stay; every other byte is written
//! `%XX`, so the mapping is one-to-one and a name never holds a `/`, never
//! starts with `.` and is never empty. A name longer than [`MAX_NAME`]
//! bytes keeps its start and ends with a hash of the whole id.

/// Longest name returned, in bytes (file systems allow 255; room is left
/// for an extension and a temporary suffix).
pub const MAX_NAME: usize = 200;

/// A file name (without extension) for `id`: see the module docs.
pub fn file_name(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push('%');
    }
    if out.len() > MAX_NAME {
        // FNV-1a, 64 bits: stable across platforms and versions.
        let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        out.truncate(MAX_NAME - 17);
        out.push_str(&format!("-{hash:016x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ids_stay_and_others_are_escaped() {
        assert_eq!(file_name("bottleneck"), "bottleneck");
        assert_eq!(file_name("m2_f.v-1"), "m2_f.v-1");
        assert_eq!(file_name("../../../escaped"), "%2E.%2F..%2F..%2Fescaped");
        assert_eq!(file_name("/tmp/x"), "%2Ftmp%2Fx");
        assert_eq!(file_name(".."), "%2E.");
        assert_eq!(file_name(""), "%");
        assert_eq!(file_name("a%2Fb"), "a%252Fb", "the escape itself is escaped: one-to-one");
        assert_eq!(file_name("é"), "%C3%A9");
        assert_eq!(file_name("a\0b"), "a%00b");
    }

    #[test]
    fn long_ids_are_cut_and_keep_apart_by_a_hash() {
        let (a, b) = ("x".repeat(1000), format!("{}y", "x".repeat(999)));
        let (fa, fb) = (file_name(&a), file_name(&b));
        assert_eq!((fa.len(), fb.len()), (MAX_NAME, MAX_NAME));
        assert_ne!(fa, fb);
        assert!(fa.starts_with("xxxx") && !fa.contains('/'));
        assert_eq!(file_name(&"/".repeat(100)).len(), MAX_NAME);
    }
}
