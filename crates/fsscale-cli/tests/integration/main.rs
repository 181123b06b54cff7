//! Integration tests: the real `fsscale` binary on real temporary trees.
//! They measure, so they run where fsscale measures: on Linux.
#![cfg(target_os = "linux")]

mod ab;
// The skip summary is the unit tests' own, shared by path.
mod analysis;
mod bpf_build;
mod cache;
mod command;
mod edges;
mod errors;
mod escaped;
mod faults;
mod filesystems;
mod fuzzed;
mod gate;
mod history;
mod hostile;
mod instruments;
mod interrupt;
mod layering;
mod leftovers;
mod like;
mod limits;
mod mdtest;
mod ministat;
mod mpi;
mod noise;
mod open_loop;
mod order;
mod planted;
mod quota;
mod registry;
mod replay;
mod report;
mod run;
mod sched;
#[path = "../../../fsscale-analysis/src/skips.rs"]
mod skips;
mod traverse;
mod trust;
mod untar;
mod util;
mod variants;
