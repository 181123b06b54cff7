//! The instruments fsscale can run beside the workers: their names, what
//! the command line says of them, and the set a run has on (written into
//! the settings as one `"name": bool` per instrument, as results files
//! always had them: a reader of an older file finds what it knew, one of a
//! newer file ignores the names it does not know). What each records and
//! how it is read is its `instruments::Section`; how it measures, the
//! measuring library's `instruments::Recorder`.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Choice;

/// An instrument fsscale can run beside the workers. Its variant is the
/// first of the places a new instrument fills; the compiler names the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Instrument {
    Locks,
    Cpu,
    Offcpu,
    Latency,
    Verify,
}

// The order is the one they are armed and turned on in (and turned off in reverse).
crate::choice!(Instrument { Locks => "locks", Cpu => "cpu", Offcpu => "offcpu", Latency => "latency", Verify => "verify" });

impl Instrument {
    /// What it shows, for `--profile`'s help.
    pub fn help(self) -> &'static str {
        match self {
            Instrument::Locks => {
                "where workers wait on kernel locks: lock:contention_* tracepoints, with the object locked and who held it (root)"
            }
            Instrument::Cpu => "where workers' CPU time goes: sampled kernel and user stacks (root)",
            Instrument::Offcpu => "where workers sleep: each switch-out asleep, with its kernel stack, until woken (root)",
            Instrument::Latency => {
                "each system call's time in the kernel, as histograms with p50/p99 within 1/16, over the window and per interval (BPF, root)"
            }
            Instrument::Verify => {
                "check that the kernel counted the system calls the op counters imply, within 0.5% (root)"
            }
        }
    }

    /// Its own flag (`--verify`) where it is not one of `--profile`'s words.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            Instrument::Verify => Some("--verify"),
            Instrument::Locks | Instrument::Cpu | Instrument::Offcpu | Instrument::Latency => None,
        }
    }

    /// `--profile locks`, `--verify`: how it is asked for.
    pub fn asked_as(self) -> String {
        match self.flag() {
            Some(flag) => flag.to_string(),
            None => format!("--profile {}", self.name()),
        }
    }

    /// Whether it is collected by BPF or through tracefs, as `--profile-via` chooses.
    pub fn collected(self) -> bool {
        match self {
            Instrument::Locks | Instrument::Offcpu => true,
            Instrument::Cpu | Instrument::Latency | Instrument::Verify => false,
        }
    }

    /// The instruments `--profile` takes (all but those with a flag of their own).
    pub fn profiles() -> impl Iterator<Item = Instrument> {
        Instrument::ALL.iter().copied().filter(|i| i.flag().is_none())
    }
}

/// A set of [`Instrument`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Instruments(u32);

impl Instruments {
    fn bit(instrument: Instrument) -> u32 {
        1 << instrument as u32
    }

    pub fn of(instruments: impl IntoIterator<Item = Instrument>) -> Instruments {
        let mut set = Instruments::default();
        for i in instruments {
            set.insert(i);
        }
        set
    }

    pub fn insert(&mut self, instrument: Instrument) {
        self.0 |= Instruments::bit(instrument);
    }

    pub fn set(&mut self, instrument: Instrument, on: bool) {
        match on {
            true => self.insert(instrument),
            false => self.0 &= !Instruments::bit(instrument),
        }
    }

    pub fn has(self, instrument: Instrument) -> bool {
        self.0 & Instruments::bit(instrument) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The instruments on, in the registry's order.
    pub fn iter(self) -> impl Iterator<Item = Instrument> {
        Instrument::ALL.iter().copied().filter(move |i| self.has(*i))
    }
}

impl Serialize for Instruments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(Instrument::ALL.len()))?;
        for &i in Instrument::ALL {
            map.serialize_entry(i.name(), &self.has(i))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Instruments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Instruments, D::Error> {
        struct Names;
        impl<'de> Visitor<'de> for Names {
            type Value = Instruments;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("instruments as names with true or false")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Instruments, A::Error> {
                let mut set = Instruments::default();
                while let Some(name) = map.next_key::<String>()? {
                    match Instrument::from_name(&name) {
                        Some(i) => set.set(i, map.next_value::<bool>()?),
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(set)
            }
        }
        deserializer.deserialize_map(Names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instrument_is_named_once_and_read_back_by_its_name() {
        let names: Vec<&str> = Instrument::ALL.iter().map(|i| i.name()).collect();
        assert_eq!(names, ["locks", "cpu", "offcpu", "latency", "verify"]);
        for &i in Instrument::ALL {
            assert_eq!(Instrument::from_name(i.name()), Some(i));
            assert!(!i.help().is_empty(), "{i} has help");
        }
        assert_eq!(Instrument::from_name("nope"), None);
        let profiles: Vec<&str> = Instrument::profiles().map(|i| i.name()).collect();
        assert_eq!(profiles, ["locks", "cpu", "offcpu", "latency"], "verify has --verify");
        assert_eq!(Instrument::Verify.asked_as(), "--verify");
        assert_eq!(Instrument::Offcpu.asked_as(), "--profile offcpu");
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Settings {
        #[serde(flatten)]
        on: Instruments,
        #[serde(default)]
        other: u32,
    }

    #[test]
    fn a_set_is_written_as_one_bool_per_instrument_and_read_back() {
        let on = Instruments::of([Instrument::Locks, Instrument::Verify]);
        let json = serde_json::to_string(&Settings { on, other: 3 }).unwrap();
        assert_eq!(json, r#"{"locks":true,"cpu":false,"offcpu":false,"latency":false,"verify":true,"other":3}"#);
        assert_eq!(serde_json::from_str::<Settings>(&json).unwrap(), Settings { on, other: 3 });
        assert_eq!(on.iter().collect::<Vec<_>>(), [Instrument::Locks, Instrument::Verify]);
    }

    #[test]
    fn a_name_this_version_does_not_know_is_ignored_and_a_missing_one_is_off() {
        let read: Settings = serde_json::from_str(r#"{"cpu":true,"gpu":{"x":1},"other":1}"#).unwrap();
        assert_eq!(read.on, Instruments::of([Instrument::Cpu]));
        assert!(serde_json::from_str::<Settings>(r#"{"cpu":"yes"}"#).is_err(), "a known name needs a bool");
        assert!(Instruments::default().is_empty());
    }
}
