//! What differs between two results files besides the system compared:
//! the host, the filesystem, how the runs were timed and instrumented, and
//! what each workload was asked to do. A comparison shows every difference
//! above its tables; one that changes a workload's op or its amount of
//! work (another tarball, other mdtest items, another lookup shape) makes
//! that workload's points not comparable, and `compare` refuses them
//! unless told `--force`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::results::ResultsFile;
use crate::vocab::Workload;

/// One setting or fact of the environment that the two sides do not share.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    pub what: String,
    pub base: String,
    pub new: String,
    /// The workloads whose op or amount of work this changes (their points
    /// measured different things); empty for the environment and timing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defines: Vec<Workload>,
}

impl Difference {
    /// "what: base → new".
    pub fn describe(&self) -> String {
        format!("{}: {} → {}", self.what, self.base, self.new)
    }
}

type Describe = fn(&ResultsFile) -> String;

/// Which workloads a definition defines.
type Defines = fn(Workload) -> bool;

/// What is compared of the environment and the timing: anything but the
/// workloads' own definitions.
const ENVIRONMENT: [(&str, Describe); 17] = [
    ("kernel", |d| format!("{} {}", d.host.kernel_release, d.host.kernel_version)),
    ("CPU", |d| d.host.cpu_model.clone()),
    ("online CPUs", |d| d.host.online_cpus.to_string()),
    ("memory", |d| format!("{:.1} GiB", d.host.memory_bytes as f64 / (1u64 << 30) as f64)),
    ("memory limit", |d| {
        d.settings.memory_limit.as_ref().map_or("none".into(), |m| crate::vocab::format_size(m.bytes))
    }),
    ("filesystem", filesystems),
    // The superblock's flags (`dirsync`, `sync`, `lazytime`) are in its
    // options, not the mount's: both, or a dirsync mount goes unsaid.
    ("mount options", mount_options),
    ("fresh filesystems", |d| d.settings.fresh.map_or("-".into(), |f| format!("--fresh {}", f.name()))),
    ("fsscale", |d| d.tool.version.clone()),
    ("duration", |d| format!("{} s", d.settings.duration_s)),
    ("runs", |d| match (d.settings.until_ci_pct, d.settings.max_runs) {
        (Some(pct), Some(max)) => format!("{} to {max}, until ±{pct}%", d.settings.runs),
        _ => d.settings.runs.to_string(),
    }),
    ("warm-up runs", |d| d.settings.warmup_runs.to_string()),
    ("warm-up", |d| match d.settings.warmup_until_steady {
        Some(steady) => format!("until steady, at most {} s", steady.max_s),
        None => format!("{} s", d.settings.warmup_s),
    }),
    // Absent in files from before it was chosen: sequential.
    ("order", |d| d.settings.order.unwrap_or(crate::vocab::Order::Sequential).name().to_string()),
    ("instruments", |d| {
        let i = d.settings.instruments;
        // How the tracepoint profiles were collected changes what they cost the workers: said.
        let via = i.via.unwrap_or_default().name();
        let mut on: Vec<String> =
            i.on.iter()
                .map(|i| match i.collected() {
                    true => format!("{} ({via})", i.asked_as()),
                    false => i.asked_as(),
                })
                .collect();
        if d.settings.latency {
            on.push("--latency".into());
        }
        if on.is_empty() {
            "none".to_string()
        } else {
            on.join(", ")
        }
    }),
    ("pinning", |d| if d.settings.pin { "--pin".to_string() } else { "none".to_string() }),
    // A command is often the very system compared (two builds, two tools): said, never refused.
    ("command", |d| d.settings.command.as_ref().map_or("-".into(), |c| c.cmd.clone())),
];

/// What defines a workload's op or amount of work, with the workloads it defines.
const DEFINITIONS: [(&str, Describe, Defines); 7] = [
    ("tarball", tarball, |w| w == Workload::Untar || (w == Workload::Traverse)),
    (
        "walked tree",
        |d| d.settings.walked_tree.as_ref().map_or("-".into(), |t| t.path.clone()),
        |w| w == Workload::Traverse,
    ),
    (
        "mdtest items",
        |d| {
            d.settings.mdtest.as_ref().map_or("-".into(), |m| {
                let wall = m.stonewall_s.map(|s| format!(", stonewall {s} s")).unwrap_or_default();
                format!("{} per worker of {} bytes{wall}", m.items, m.write_bytes)
            })
        },
        Workload::is_mdtest,
    ),
    (
        "lookups",
        |d| d.settings.lookup.map_or("one relative name".into(), |l| l.describe()),
        Workload::takes_lookup_shape,
    ),
    (
        "fault mapping",
        // Files from before --map-size mapped 4 MiB.
        |d| crate::vocab::format_size(d.settings.map_bytes.unwrap_or(4 << 20)),
        Workload::maps_a_file,
    ),
    (
        "replayed trace",
        |d| {
            // A loadfile by its content, wherever each side read it from.
            d.settings.replay.as_ref().map_or("-".into(), |r| match &r.sha256 {
                Some(sha) => format!("a loadfile of sha256 {}", sha.get(..12).unwrap_or(sha)),
                None => r.trace.clone(),
            })
        },
        |w| w == Workload::Replay,
    ),
    (
        "append-grow size",
        |d| d.settings.grow_bytes.map_or("-".into(), |b| format!("{b} bytes")),
        |w| w == Workload::AppendGrow,
    ),
];

fn filesystems(d: &ResultsFile) -> String {
    let made: BTreeSet<String> = d.points.iter().filter_map(|p| p.filesystem.as_ref().map(|f| f.describe())).collect();
    match made.is_empty() {
        true => format!("{} ({})", d.target.fs_type, d.target.mount_options),
        false => made.into_iter().collect::<Vec<_>>().join(", "),
    }
}

/// The mount's and the superblock's options of the filesystem measured:
/// the target's, or each made filesystem's by its label.
fn mount_options(d: &ResultsFile) -> String {
    let made: BTreeSet<String> = d
        .points
        .iter()
        .filter_map(|p| p.filesystem.as_ref())
        .map(|f| format!("{}: {}; {}", f.label, f.mount_options, f.super_options))
        .collect();
    match made.is_empty() {
        true => format!("{}; {}", d.target.mount_options, d.target.super_options),
        false => made.into_iter().collect::<Vec<_>>().join(" | "),
    }
}

fn tarball(d: &ResultsFile) -> String {
    d.settings.untar.as_ref().map_or("-".into(), |u| {
        let source = match (u.scale, u.seed) {
            (Some(scale), Some(seed)) => format!("generated, scale {scale} seed {seed}"),
            // Its content, wherever it was read from; an older file has only the path.
            _ => match &u.sha256 {
                Some(sha) => format!("sha256 {}", sha.get(..12).unwrap_or(sha)),
                None => u.tarball.clone(),
            },
        };
        format!("{source}: {} entries, {} bytes", u.entries, u.bytes)
    })
}

/// Every difference between `base` and `new`. A workload definition counts
/// only where both files measured a workload it defines.
pub fn differences(base: &ResultsFile, new: &ResultsFile) -> Vec<Difference> {
    let ran = |d: &ResultsFile| -> BTreeSet<Workload> { d.points.iter().map(|p| p.workload).collect() };
    let both: Vec<Workload> = ran(base).intersection(&ran(new)).copied().collect();
    let mut out = Vec::new();
    for (what, describe) in ENVIRONMENT {
        let (b, n) = (describe(base), describe(new));
        if b != n {
            out.push(Difference { what: what.to_string(), base: b, new: n, defines: Vec::new() });
        }
    }
    for (what, describe, defines) in DEFINITIONS {
        let (b, n) = (describe(base), describe(new));
        let defines: Vec<Workload> = both.iter().copied().filter(|w| defines(*w)).collect();
        if b != n && !defines.is_empty() {
            out.push(Difference { what: what.to_string(), base: b, new: n, defines });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::doc;
    use crate::results::{MdtestSettings, UntarSettings};

    #[test]
    fn profiles_collected_another_way_are_an_environment_difference() {
        let mut base = doc(&[(Workload::CreatUnlink, 2, &[1.0, 2.0])]);
        base.settings.instruments.on.insert(crate::instruments::Instrument::Locks);
        let mut new = base.clone();
        new.settings.instruments.via = Some(crate::results::Collector::Bpf);
        new.settings.instruments.on.insert(crate::instruments::Instrument::Offcpu);
        let found: Vec<String> = differences(&base, &new).iter().map(|d| d.describe()).collect();
        assert_eq!(found, ["instruments: --profile locks (tracefs) → --profile locks (bpf), --profile offcpu (bpf)"]);
    }

    #[test]
    fn a_dirsync_mount_is_said_though_only_the_superblock_shows_it() {
        // mountinfo of `mount -t tmpfs -o dirsync`: rw,relatime for the mount, dirsync for the superblock.
        let mut base = doc(&[(Workload::CreatUnlink, 1, &[1.0, 2.0])]);
        base.target.mount_options = "rw,relatime".into();
        base.target.super_options = "rw,size=1024k".into();
        let mut new = base.clone();
        new.target.super_options = "rw,dirsync,size=1024k".into();
        let found: Vec<String> = differences(&base, &new).iter().map(|d| d.describe()).collect();
        assert_eq!(found, ["mount options: rw,relatime; rw,size=1024k → rw,relatime; rw,dirsync,size=1024k"]);
        // On a made filesystem, by its label.
        let made = |superblock: &str| crate::vocab::FsRecord {
            label: "ext4".into(),
            kind: crate::vocab::FsKind::Ext4,
            mkfs_command: None,
            mkfs_version: None,
            mount_options: "rw,relatime".into(),
            super_options: superblock.into(),
            device: Some("/dev/loop0".into()),
            backing: "file:/var/tmp".into(),
            size_bytes: 1 << 30,
        };
        let (mut base, mut new) = (base.clone(), base);
        base.points[0].filesystem = Some(made("rw"));
        new.points[0].filesystem = Some(made("rw,dirsync"));
        let found: Vec<String> = differences(&base, &new).iter().map(|d| d.describe()).collect();
        assert_eq!(found, ["mount options: ext4: rw,relatime; rw → ext4: rw,relatime; rw,dirsync"]);
    }

    #[test]
    fn warm_up_order_and_the_replayed_trace_are_said() {
        let mut base = doc(&[(Workload::Replay, 1, &[1.0, 2.0])]);
        let replay = |sha: Option<&str>, trace: &str| crate::results::ReplaySettings {
            trace: trace.into(),
            ops_per_pass: Default::default(),
            bytes_per_pass: 0,
            sha256: sha.map(str::to_string),
        };
        base.settings.replay = Some(replay(Some("0123456789abcdef"), "/home/a/client.txt"));
        let mut new = base.clone();
        // The same loadfile read from elsewhere is no difference.
        new.settings.replay = Some(replay(Some("0123456789abcdef"), "/srv/b/client.txt"));
        assert_eq!(differences(&base, &new), []);
        new.settings.replay = Some(replay(None, "fileserver (built in)"));
        new.settings.warmup_s = base.settings.warmup_s + 1.0;
        new.settings.order = Some(crate::vocab::Order::Shuffled);
        let found: Vec<(String, Vec<Workload>)> =
            differences(&base, &new).into_iter().map(|d| (d.describe(), d.defines)).collect();
        assert_eq!(
            found,
            [
                (format!("warm-up: {} s → {} s", base.settings.warmup_s, new.settings.warmup_s), vec![]),
                ("order: sequential → shuffled".to_string(), vec![]),
                (
                    "replayed trace: a loadfile of sha256 0123456789ab → fileserver (built in)".to_string(),
                    vec![Workload::Replay]
                ),
            ]
        );
    }

    #[test]
    fn environment_differences_are_listed_and_workload_definitions_name_their_workloads() {
        let base = doc(&[(Workload::Stat, 1, &[1.0, 2.0]), (Workload::Untar, 1, &[1.0, 2.0])]);
        let mut new = base.clone();
        assert_eq!(differences(&base, &new), []);
        new.host.online_cpus += 2;
        new.settings.instruments.on.insert(crate::instruments::Instrument::Cpu);
        new.settings.memory_limit =
            Some(crate::results::MemoryLimitSettings { bytes: 256 << 20, cgroup: "cgroup v2 memory.max (/x)".into() });
        let untar = |scale| UntarSettings {
            tarball: String::new(),
            scale: Some(scale),
            seed: Some(1),
            extract_cmd: None,
            entries: 10,
            bytes: 100,
            sha256: None,
        };
        let mut base = base;
        base.settings.untar = Some(untar(0.1));
        new.settings.untar = Some(untar(0.25));
        // mdtest items differ, but neither file ran an mdtest phase: not listed.
        new.settings.mdtest = Some(MdtestSettings { items: 5, write_bytes: 0, stonewall_s: None });
        let found: Vec<(String, Vec<Workload>)> =
            differences(&base, &new).into_iter().map(|d| (d.describe(), d.defines)).collect();
        let cpus = format!("online CPUs: {} → {}", base.host.online_cpus, new.host.online_cpus);
        assert_eq!(
            found,
            [
                (cpus, vec![]),
                ("memory limit: none → 256 MiB".to_string(), vec![]),
                ("instruments: none → --profile cpu".to_string(), vec![]),
                (
                    "tarball: generated, scale 0.1 seed 1: 10 entries, 100 bytes → generated, scale 0.25 seed 1: 10 entries, 100 bytes"
                        .to_string(),
                    vec![Workload::Untar]
                ),
            ]
        );
    }
}
