//! Buffered archive input that knows its byte offset, so every error can say
//! where in the tarball it happened.

use std::io::Read;
use std::os::fd::BorrowedFd;

use anyhow::{anyhow, bail, Result};

use crate::sys;

const BLOCK: u64 = 512;
const BUFFER: usize = 1 << 20;
/// Metadata entries (pax headers, GNU long names) larger than this are corrupt.
const MAX_METADATA: u64 = 1 << 20;

pub(crate) struct Input<'a> {
    inner: &'a mut dyn Read,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    offset: u64,
}

impl<'a> Input<'a> {
    pub fn new(inner: &'a mut dyn Read) -> Input<'a> {
        Input { inner, buf: vec![0u8; BUFFER], start: 0, end: 0, offset: 0 }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Makes at least one byte available; false at end of file.
    fn fill(&mut self) -> Result<bool> {
        if self.start < self.end {
            return Ok(true);
        }
        loop {
            match self.inner.read(&mut self.buf) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.start = 0;
                    self.end = n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => bail!("reading the tarball at byte offset {}: {e}", self.offset),
            }
        }
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let slice = &self.buf[self.start..self.start + n];
        self.start += n;
        self.offset += n as u64;
        slice
    }

    /// Reads one 512-byte header block; false at a clean end of file.
    pub(crate) fn read_block(&mut self, out: &mut [u8; 512]) -> Result<bool> {
        let mut got = 0;
        while got < out.len() {
            if !self.fill()? {
                if got == 0 {
                    return Ok(false);
                }
                bail!("truncated tarball: it ends at byte offset {} inside a header", self.offset);
            }
            let n = (self.end - self.start).min(out.len() - got);
            out[got..got + n].copy_from_slice(self.take(n));
            got += n;
        }
        Ok(true)
    }

    /// Walks over `size` bytes of entry data and the padding after them,
    /// handing each buffered piece to `sink`.
    fn consume(
        &mut self,
        size: u64,
        header_offset: u64,
        name: &str,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let padded = size.div_ceil(BLOCK) * BLOCK;
        let mut left = padded;
        while left > 0 {
            if !self.fill()? {
                let missing = left.saturating_sub(padded - size);
                bail!(
                    "truncated tarball: it ends at byte offset {} inside entry \"{name}\" (header at byte offset {header_offset}, {} bytes of data missing)",
                    self.offset,
                    missing.max(1)
                );
            }
            let n = (self.end - self.start).min(left as usize);
            let data_left = left.saturating_sub(padded - size) as usize;
            let piece = self.take(n);
            if data_left > 0 {
                sink(&piece[..n.min(data_left)])?;
            }
            left -= n as u64;
        }
        Ok(())
    }

    pub(crate) fn skip_data(&mut self, size: u64, header_offset: u64, name: &str) -> Result<()> {
        self.consume(size, header_offset, name, |_| Ok(()))
    }

    /// Reads a small metadata entry (pax header, GNU long name) whole.
    pub(crate) fn read_data(&mut self, size: u64, header_offset: u64, name: &str) -> Result<Vec<u8>> {
        if size > MAX_METADATA {
            bail!("corrupt tarball: metadata entry of {size} bytes at byte offset {header_offset}");
        }
        let mut data = Vec::with_capacity(size as usize);
        self.consume(size, header_offset, name, |piece| {
            data.extend_from_slice(piece);
            Ok(())
        })?;
        Ok(data)
    }

    /// Writes `size` bytes of entry data to `fd`.
    pub(crate) fn copy_data(&mut self, size: u64, fd: BorrowedFd<'_>, header_offset: u64, name: &str) -> Result<()> {
        self.consume(size, header_offset, name, |mut piece| {
            while !piece.is_empty() {
                let n = sys::write(fd, piece).map_err(|e| {
                    anyhow!("entry \"{name}\" at byte offset {header_offset}: writing: {}", sys::errno_text(e))
                })?;
                piece = &piece[n..];
            }
            Ok(())
        })
    }
}
