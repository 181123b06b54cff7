//! Integration tests: the real `fsscale` binary on real temporary trees.

mod errors;
mod interrupt;
mod run;
mod util;
