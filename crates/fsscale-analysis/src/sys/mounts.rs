//! This process's mounts, from `/proc/self/mountinfo`.

/// One line of `/proc/self/mountinfo`, mount point and source unescaped.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    /// `major:minor`.
    pub device: String,
    pub mount_point: String,
    pub mount_options: String,
    pub fs_type: String,
    pub source: String,
    pub super_options: String,
}

/// Parses mountinfo text, skipping lines it cannot read.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            (left.len() >= 6 && right.len() >= 3).then(|| Mount {
                device: left[2].to_string(),
                mount_point: unescape(left[4]),
                mount_options: left[5].to_string(),
                fs_type: right[0].to_string(),
                source: unescape(right[1]),
                super_options: right[2].to_string(),
            })
        })
        .collect()
}

/// This process's mounts now.
pub fn mounts() -> Vec<Mount> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// The mount whose mount point is the longest prefix of `path`; later lines win
/// ties because they are mounted on top.
pub fn find_mount<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    let mut best: Option<&Mount> = None;
    for mount in mounts {
        let point = mount.mount_point.as_str();
        let inside =
            path == point || point == "/" || path.strip_prefix(point).is_some_and(|rest| rest.starts_with('/'));
        if inside && best.is_none_or(|b| point.len() >= b.mount_point.len()) {
            best = Some(mount);
        }
    }
    best
}

/// mountinfo escapes space, tab, newline and backslash as octal `\NNN`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let value = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684096k
40 27 7:0 / /mnt/with\\040space rw,noatime - xfs /dev/loop0 rw,attr2,inode64
41 27 0:50 / /dev/shm rw,nosuid - tmpfs other rw,size=1k
";

    #[test]
    fn picks_the_innermost_and_topmost_mount() {
        let mounts = parse_mountinfo(MOUNTINFO);
        let m = find_mount(&mounts, "/dev/shm/x/y").unwrap();
        assert_eq!((m.device.as_str(), m.source.as_str(), m.mount_options.as_str()), ("0:50", "other", "rw,nosuid"));
        let m = find_mount(&mounts, "/dev/shmfoo").unwrap();
        assert_eq!(m.mount_point, "/");
        let m = find_mount(&mounts, "/mnt/with space/dir").unwrap();
        assert_eq!((m.fs_type.as_str(), m.super_options.as_str()), ("xfs", "rw,attr2,inode64"));
        assert_eq!(m.mount_point, "/mnt/with space", "unescaped");
    }
}
