use std::os::fd::AsRawFd;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    std::fs::create_dir(&a[2]).unwrap();
    let root = std::fs::File::open(&a[2]).unwrap();
    let mut f = std::fs::File::open(&a[1]).unwrap();
    let t = std::time::Instant::now();
    let s = fsscale::archive::extract(&mut f, root.as_raw_fd(), &|| false, &|_| {}).unwrap();
    println!("{:.3}s {:?}", t.elapsed().as_secs_f64(), s);
}
