//! `fstatat(dir, "f", &st, 0)` in a loop for one second, through libc's
//! wrapper or rustix's own system call: the same call, as strace shows it.

use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_default();
    let dir = std::fs::File::open("/dev/shm").expect("/dev/shm");
    let name = format!("syscall-path-{}", std::process::id());
    std::fs::write(format!("/dev/shm/{name}"), b"").expect("a file in /dev/shm");
    let cname = std::ffi::CString::new(name.clone()).expect("no NUL");
    let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
    let (mut calls, start) = (0u64, Instant::now());
    while start.elapsed().as_secs_f64() < 1.0 {
        for _ in 0..1000 {
            match path.as_str() {
                // SAFETY: a valid C string and a buffer of the size fstatat writes.
                "libc" => unsafe { libc::fstatat(dir.as_raw_fd(), cname.as_ptr(), st.as_mut_ptr(), 0) },
                "rustix" => rustix::fs::statat(dir.as_fd(), cname.as_c_str(), rustix::fs::AtFlags::empty()).map_or(-1, |_| 0),
                _ => panic!("give libc or rustix"),
            };
        }
        calls += 1000;
    }
    println!("{path}: {:.0} fstatat/s", calls as f64 / start.elapsed().as_secs_f64());
    let _ = std::fs::remove_file(format!("/dev/shm/{name}"));
}
