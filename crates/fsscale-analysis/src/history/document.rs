//! A recorded result's document as the store keeps it: its compact JSON,
//! zstd-compressed (a results file's JSON shrinks about tenfold; the store
//! keeps every result whole, and 10,000 of the default suite fill a disk
//! otherwise: docs/BENCHMARKS.md).

use std::io::Read;

use anyhow::{bail, Context, Result};

use crate::results::MAX_INPUT_BYTES;

/// zstd's default level (sizes and times of others: docs/BENCHMARKS.md).
const LEVEL: i32 = 3;

pub(super) fn pack(json: &str) -> Result<Vec<u8>> {
    zstd::encode_all(json.as_bytes(), LEVEL).context("compressing a results document")
}

/// The JSON of a packed document. A store may be damaged or not fsscale's:
/// no more than a results file may hold is unpacked (a few bytes may claim
/// gigabytes), and what is not UTF-8 is refused.
pub(super) fn unpack(packed: &[u8]) -> Result<String> {
    let mut json = Vec::new();
    zstd::Decoder::new(packed)?.take(MAX_INPUT_BYTES + 1).read_to_end(&mut json).context("not zstd-compressed")?;
    if json.len() as u64 > MAX_INPUT_BYTES {
        bail!("it unpacks to more than a results file may hold ({MAX_INPUT_BYTES} bytes)");
    }
    String::from_utf8(json).context("it unpacks to text that is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_unpacks_to_what_was_packed_and_damage_is_an_error() {
        let json = r#"{"version":9,"points":[]}"#.repeat(100);
        let packed = pack(&json).unwrap();
        assert!(packed.len() * 10 < json.len(), "{} of {}", packed.len(), json.len());
        assert_eq!(unpack(&packed).unwrap(), json);
        assert!(unpack(&packed[..packed.len() / 2]).is_err());
        assert!(unpack(b"{\"not\": \"packed\"}").is_err());
        let latin1 = zstd::encode_all(&b"caf\xe9"[..], 3).unwrap();
        assert!(format!("{:#}", unpack(&latin1).unwrap_err()).contains("not UTF-8"));
    }
}
