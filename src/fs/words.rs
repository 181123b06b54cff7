//! What a user may pass to mkfs and mount: options, never a device or a file.
//!
//! Run as root, `mkfs.btrfs` takes any word that is not an option as one
//! more device and formats it, and mount(8) reads `bind`, `loop` or
//! `x-mount.mkdir` as orders to act on paths. So user words are checked
//! here, and the tools also run in an empty private directory (see
//! [`FsInstance`](super::FsInstance)), where a relative name names nothing.

use crate::vocab::InputError;

/// Splits `--mkfs-opts` into words that can only be options: each word
/// starts with `-`, or is the value right after an option that has none
/// attached (`-b 4096`, `-O ^has_journal`); no word holds a `/`.
pub fn parse_mkfs_options(text: &str) -> Result<Vec<String>, InputError> {
    let words: Vec<String> = text.split_whitespace().map(String::from).collect();
    let mut may_take_value = false;
    for word in &words {
        if word.contains('/') {
            return Err(InputError::Malformed(format!(
                "--mkfs-opts '{word}' names a path; mkfs options may not name devices or files \
                 (fsscale formats only the device it made)"
            )));
        }
        if word.starts_with('-') && word.len() > 1 {
            // `-b` or `--label` may be followed by its value; `-b4096` and `--label=x` carry theirs.
            may_take_value = !word.contains('=') && (word.len() == 2 || word.starts_with("--"));
        } else if may_take_value {
            may_take_value = false;
        } else {
            return Err(InputError::Malformed(format!(
                "--mkfs-opts '{word}' is not an option (it would be read as a device to format); \
                 give options and their values only, e.g. '-b 1024 -O ^has_journal'"
            )));
        }
    }
    Ok(words)
}

/// Mount options that make mount(8) act on paths or other mounts.
const PATH_OPTIONS: &[&str] =
    &["bind", "rbind", "move", "remount", "loop", "offset", "sizelimit", "encryption", "helper"];

/// Checks `KIND:OPTS`'s options: comma-separated words that neither name a
/// path nor ask mount(8) to act on one.
pub(crate) fn check_mount_options(options: &str) -> Result<(), InputError> {
    for option in options.split(',') {
        let name = option.split('=').next().unwrap_or_default();
        let refusal = if option.contains('/') {
            Some("names a path")
        } else if PATH_OPTIONS.contains(&name) {
            Some("makes mount act on another path or mount")
        } else if name.starts_with("x-") || name.starts_with("X-") {
            Some("is one of mount(8)'s own x- options, which act on paths")
        } else {
            None
        };
        if let Some(why) = refusal {
            return Err(InputError::Malformed(format!(
                "mount option '{option}' {why}; fsscale mounts only the filesystem it made, \
                 so give the filesystem's own options (e.g. noatime, data=journal)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_options_are_options_and_their_values() {
        let ok = |t: &str| parse_mkfs_options(t).unwrap();
        assert_eq!(ok("-b 1024 -O ^has_journal"), ["-b", "1024", "-O", "^has_journal"]);
        assert_eq!(
            ok("--nodesize 16384 -m crc=1 -E lazy_itable_init=0"),
            ["--nodesize", "16384", "-m", "crc=1", "-E", "lazy_itable_init=0"]
        );
        assert!(ok("").is_empty());
        // A second word after a value, a leading word, a value after `--x=y`: all devices to mkfs.
        for bad in ["-b 1024 victim", "victim", "--label=x victim", "-b4096 victim", "-"] {
            let e = parse_mkfs_options(bad).unwrap_err().to_string();
            assert!(e.contains("is not an option"), "{bad}: {e}");
        }
        for bad in ["/etc/passwd", "-F /tmp/x", "-J device=/dev/sdb", "-d ./dir"] {
            let e = parse_mkfs_options(bad).unwrap_err().to_string();
            assert!(e.contains("names a path"), "{bad}: {e}");
        }
    }

    #[test]
    fn mount_options_never_act_on_paths() {
        assert!(check_mount_options("noatime,data=journal,commit=5").is_ok());
        for bad in ["bind", "noatime,rbind", "loop=/dev/loop0", "x-mount.mkdir", "X-mount.owner=0", "remount"] {
            assert!(check_mount_options(bad).is_err(), "{bad}");
        }
        assert!(check_mount_options("journal_path=/dev/sdb").unwrap_err().to_string().contains("names a path"));
    }
}
