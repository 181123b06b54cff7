//! Writes a tree as an uncompressed POSIX ustar archive, with pax records
//! for names that do not fit ustar's 100 + 155 bytes. Owner 0:0 and fixed
//! times make the bytes depend on nothing but the tree.

use std::io::Write;

use super::{fill_content, EntryKind, TreeSpec, TreeStats};

const BLOCK: usize = 512;

/// Writes `spec`'s tree to `out` as a tar archive.
pub fn write_tar(spec: &TreeSpec, out: &mut dyn Write) -> std::io::Result<TreeStats> {
    write_tar_until(spec, out, &|| false)
}

/// [`write_tar`], asking `stop` before every entry: a stop ends it with
/// `ErrorKind::Interrupted` (a scale-1 tarball is seconds of writing).
pub fn write_tar_until(spec: &TreeSpec, out: &mut dyn Write, stop: &dyn Fn() -> bool) -> std::io::Result<TreeStats> {
    let mut stats = TreeStats::default();
    let mut buf = vec![0u8; 1 << 20];
    for entry in spec.entries() {
        if stop() {
            return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "stopped"));
        }
        let (typeflag, size, link) = match &entry.kind {
            EntryKind::Dir => (b'5', 0, ""),
            EntryKind::File { size, .. } => (b'0', *size, ""),
            EntryKind::Symlink { target } => (b'2', 0, target.as_str()),
            EntryKind::HardLink { target } => (b'1', 0, target.as_str()),
        };
        let name = if typeflag == b'5' { format!("{}/", entry.path) } else { entry.path.clone() };
        write_entry_header(out, &name, entry.mode, size, entry.mtime, typeflag, link)?;
        if let EntryKind::File { size, content_seed } = entry.kind {
            let mut offset = 0;
            while offset < size {
                let chunk = (size - offset).min(buf.len() as u64) as usize;
                fill_content(content_seed, offset, &mut buf[..chunk]);
                out.write_all(&buf[..chunk])?;
                offset += chunk as u64;
            }
            pad(out, size)?;
        }
        stats.count(&entry);
    }
    out.write_all(&[0u8; 2 * BLOCK])?;
    Ok(stats)
}

fn pad(out: &mut dyn Write, size: u64) -> std::io::Result<()> {
    let rest = (BLOCK - (size % BLOCK as u64) as usize) % BLOCK;
    out.write_all(&[0u8; BLOCK][..rest])
}

/// Writes the header(s) of one entry: a pax header first when needed.
pub fn write_entry_header(
    out: &mut dyn Write,
    name: &str,
    mode: u32,
    size: u64,
    mtime: i64,
    typeflag: u8,
    link: &str,
) -> std::io::Result<()> {
    let split = split_name(name);
    let mut records = String::new();
    if split.is_none() {
        records.push_str(&pax_record("path", name));
    }
    if link.len() > 100 {
        records.push_str(&pax_record("linkpath", link));
    }
    if !records.is_empty() {
        let short: String = name.trim_end_matches('/').rsplit('/').next().unwrap_or("entry").chars().take(80).collect();
        let header = ustar_header(("", &format!("PaxHeaders/{short}")), 0o644, records.len() as u64, mtime, b'x', "");
        out.write_all(&header)?;
        out.write_all(records.as_bytes())?;
        pad(out, records.len() as u64)?;
    }
    let (prefix, short) = split.unwrap_or(("", truncate(name, 100)));
    out.write_all(&ustar_header((prefix, short), mode, size, mtime, typeflag, truncate(link, 100)))
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// ustar's name fields: the name alone, or prefix/name split at a slash.
fn split_name(name: &str) -> Option<(&str, &str)> {
    if name.len() <= 100 {
        return Some(("", name));
    }
    let bytes = name.as_bytes();
    (0..bytes.len().min(156)).rev().filter(|&i| bytes[i] == b'/').find_map(|i| {
        let (prefix, rest) = (&name[..i], &name[i + 1..]);
        (prefix.len() <= 155 && !rest.is_empty() && rest.len() <= 100).then_some((prefix, rest))
    })
}

/// A pax record: `"<length> key=value\n"`, where length counts itself.
fn pax_record(key: &str, value: &str) -> String {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while len.to_string().len() + body.len() != len {
        len = len.to_string().len() + body.len();
    }
    format!("{len}{body}")
}

fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(&text.as_bytes()[text.len() - digits..]);
    field[digits] = 0;
}

fn ustar_header(
    (prefix, name): (&str, &str),
    mode: u32,
    size: u64,
    mtime: i64,
    typeflag: u8,
    link: &str,
) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    h[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut h[100..108], u64::from(mode & 0o7777));
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    if size < 8u64.pow(11) {
        octal(&mut h[124..136], size);
    } else {
        // GNU base-256 for sizes of 8 GiB and more.
        h[124] = 0x80;
        h[128..136].copy_from_slice(&size.to_be_bytes());
    }
    octal(&mut h[136..148], mtime.max(0) as u64);
    h[156] = typeflag;
    h[157..157 + link.len()].copy_from_slice(link.as_bytes());
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let text = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(text.as_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_records_count_their_own_length() {
        assert_eq!(pax_record("path", "a"), "9 path=a\n"); // 1 + 1 + 6 + 1 bytes
        let long = "x".repeat(95);
        let r = pax_record("path", &long);
        assert_eq!(r.len().to_string(), r.split(' ').next().unwrap());
    }

    #[test]
    fn splits_long_names_at_a_slash() {
        let name = format!("{}/{}", "d".repeat(120), "f".repeat(50));
        assert_eq!(split_name(&name), Some((&name[..120], &name[121..])));
        assert_eq!(split_name(&"x".repeat(300)), None);
    }

    #[test]
    fn gnu_tar_reads_what_we_write() {
        let dir = tempfile::tempdir().unwrap();
        let tar = dir.path().join("t.tar");
        let spec = TreeSpec { scale: 0.002, seed: 3 };
        let stats = write_tar(&spec, &mut std::fs::File::create(&tar).unwrap()).unwrap();
        let out = std::process::Command::new("tar").arg("tf").arg(&tar).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let listed = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
        assert_eq!(listed, stats.entries());
    }
}
