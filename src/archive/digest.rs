//! Content hashes of what a run reads from outside (`--tarball`, `--tree`),
//! recorded so that `run --like` can tell the same input from another
//! with the same counts.

use std::io::Read;
use std::path::Path;

use anyhow::Result;
use sha2::{Digest, Sha256};

/// A reader that hashes what passes through it, so a scan that reads a
/// tarball anyway hashes it in the same pass.
pub struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> HashingReader<R> {
    pub fn new(inner: R) -> HashingReader<R> {
        HashingReader { inner, hasher: Sha256::new() }
    }

    /// The SHA-256 of every byte read, in hex.
    pub fn finish(self) -> String {
        hex(&self.hasher.finalize())
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The SHA-256 of the regular file at `path`, opened without blocking (a
/// FIFO or device there is refused, never waited on).
pub fn file_sha256(path: &Path) -> Result<String> {
    let file = crate::sys::open_input(path, u64::MAX)?;
    let mut reader = HashingReader::new(file);
    std::io::copy(&mut reader, &mut std::io::sink())?;
    Ok(reader.finish())
}

/// Bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_of_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        // FIPS 180-2's first example.
        assert_eq!(file_sha256(&path).unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
