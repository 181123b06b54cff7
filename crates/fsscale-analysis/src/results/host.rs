//! What machine the results came from.

use serde::{Deserialize, Serialize};

use crate::sys;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Host {
    pub hostname: String,
    /// `uname -s`, `-r`, `-v`, `-m`.
    pub os: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub arch: String,
    pub cpu_model: String,
    pub online_cpus: usize,
    /// The CPUs fsscale was allowed to run on (affinity mask), when fewer than online.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_cpus: Vec<usize>,
    /// A cgroup CPU bandwidth limit, in CPUs, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_cpu_limit: Option<f64>,
    /// What `cores` meant: the allowed CPUs, lowered to the cgroup limit.
    #[serde(default)]
    pub usable_cpus: usize,
    pub memory_bytes: u64,
}

impl Host {
    /// How `here` differs from this machine in what a measurement depends
    /// on (its name, kernel, CPUs and the CPUs allowed), as words; `None`
    /// when it is the same machine as far as fsscale can tell.
    pub fn differs_from(&self, here: &Host) -> Option<String> {
        let e = |s: &str| crate::escape::for_terminal(s).into_owned();
        if self.hostname != here.hostname {
            Some(format!("host {}, not this host {}", e(&self.hostname), e(&here.hostname)))
        } else if (&self.kernel_release, &self.kernel_version) != (&here.kernel_release, &here.kernel_version) {
            Some(format!("kernel {}, not this kernel {}", e(&self.kernel_release), e(&here.kernel_release)))
        } else if (&self.cpu_model, self.online_cpus) != (&here.cpu_model, here.online_cpus) {
            Some(format!(
                "{} CPUs ({}), not this machine's {} ({})",
                self.online_cpus,
                e(&self.cpu_model),
                here.online_cpus,
                e(&here.cpu_model)
            ))
        } else if (&self.allowed_cpus, self.usable_cpus) != (&here.allowed_cpus, here.usable_cpus) {
            Some(format!(
                "{} usable CPUs, not the {} usable here (affinity or cgroup limit)",
                self.usable_cpus, here.usable_cpus
            ))
        } else {
            None
        }
    }

    /// Reads the host description; fields the system does not expose stay empty.
    pub fn detect() -> Host {
        let online_cpus = sys::online_cpus();
        let allowed = sys::allowed_cpus();
        let mut host = Host {
            online_cpus,
            allowed_cpus: if allowed.len() < online_cpus { allowed } else { Vec::new() },
            cgroup_cpu_limit: sys::cgroup_cpu_limit(),
            usable_cpus: sys::usable_cpus(),
            ..Host::default()
        };
        let uts = rustix::system::uname();
        let field = |f: &std::ffi::CStr| f.to_string_lossy().into_owned();
        host.hostname = field(uts.nodename());
        host.os = field(uts.sysname());
        host.kernel_release = field(uts.release());
        host.kernel_version = field(uts.version());
        host.arch = field(uts.machine());
        if let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") {
            host.cpu_model = cpu_model(&cpuinfo).unwrap_or_default();
        }
        if let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") {
            host.memory_bytes = mem_total(&meminfo).unwrap_or(0);
        }
        host
    }
}

/// The first "model name" (x86) or "Processor"/"CPU part" style line.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Processor", "cpu model", "CPU part"].iter().find_map(|key| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == *key).then(|| v.trim().to_string())
        })
    })
}

fn mem_total(meminfo: &str) -> Option<u64> {
    crate::sys::meminfo_value(meminfo, "MemTotal")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpuinfo_and_meminfo() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(mem_total("MemTotal:       24684096 kB\nMemFree: 1 kB\n"), Some(24684096 * 1024));
    }

    #[test]
    fn detects_this_host() {
        let host = Host::detect();
        assert!(host.online_cpus >= 1);
        assert_eq!(host.os, "Linux");
        assert!(!host.kernel_release.is_empty());
    }
}
