//! fsscale's own flame graphs and symbol tables against inferno's and
//! blazesym's, on the same inputs: how long each takes, what it produces,
//! and where the two disagree. fsscale's code is compiled here from its
//! own files, unchanged, so the figures are of what ships.
//!
//! `symbols-and-flames flames FOLDED [BASE]` · `kernel` · `user ELF`

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

#[path = "../../../crates/fsscale-analysis/src/escape.rs"]
mod escape;
#[path = "../../../crates/fsscale-analysis/src/report/flame.rs"]
pub(crate) mod flame;
#[path = "../../../crates/fsscale-analysis/src/report/markup.rs"]
pub(crate) mod markup;
/// Where fsscale's macros look for the markup (`$crate::report::markup`).
mod report {
    pub(crate) use super::{flame, markup};
}
#[path = "../../../src/instruments/kallsyms.rs"]
mod kallsyms;
#[path = "../../../src/instruments/usersyms.rs"]
mod usersyms;

/// The best of `runs` timings of `f` (the least disturbed), and its last result.
fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        let out = f();
        best = best.min(start.elapsed());
        last = Some(out);
    }
    (best, last.expect("runs > 0"))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// A small deterministic generator (Knuth's MMIX LCG): the same inputs every run.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn read_folded(path: &str) -> Result<BTreeMap<String, u64>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let mut folded = BTreeMap::new();
    for line in text.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else { continue };
        *folded.entry(stack.to_string()).or_insert(0) += n.trim().parse::<u64>().unwrap_or(0);
    }
    Ok(folded)
}

fn folded_lines(folded: &BTreeMap<String, u64>) -> Vec<String> {
    folded.iter().map(|(s, n)| format!("{s} {n}")).collect()
}

/// inferno set to draw what fsscale draws: 1000 px wide, frames of 0.5 px
/// or more, colours from the names, and no script (fsscale's reports have none).
fn inferno_options(title: &str) -> inferno::flamegraph::Options<'static> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.image_width = Some(1000);
    // inferno counts it in percent of the width: 0.5 px of 1000.
    options.min_width = 0.05;
    options.hash = true;
    options.no_javascript = true;
    options
}

fn inferno_svg(folded: &BTreeMap<String, u64>, title: &str) -> String {
    let lines = folded_lines(folded);
    let mut options = inferno_options(title);
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out).expect("inferno renders");
    String::from_utf8(out).expect("inferno writes UTF-8")
}

fn inferno_differential_svg(base: &BTreeMap<String, u64>, new: &BTreeMap<String, u64>, title: &str) -> String {
    let before = folded_lines(base).join("\n");
    let after = folded_lines(new).join("\n");
    let mut diff = Vec::new();
    let options = inferno::differential::Options { normalize: true, strip_hex: false };
    inferno::differential::from_readers(options, before.as_bytes(), after.as_bytes(), &mut diff).expect("diff");
    let text = String::from_utf8(diff).expect("UTF-8");
    let mut options = inferno_options(title);
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, text.lines(), &mut out).expect("inferno renders");
    String::from_utf8(out).expect("inferno writes UTF-8")
}

fn flames(args: &[String]) -> Result<()> {
    let Some(path) = args.first() else { bail!("flames FOLDED [BASE]") };
    let new = read_folded(path)?;
    let base = match args.get(1) {
        Some(base) => read_folded(base)?,
        None => new.clone(),
    };
    let frames: usize = new.keys().map(|s| s.split(';').count()).sum();
    println!("input: {} stacks, {} frames, {} samples", new.len(), frames, new.values().sum::<u64>());
    let runs = 7;
    let (ours, svg) = best_of(runs, || report::flame::flame_graph_svg(&new, "t", report::flame::ON_CPU).into_string());
    let (theirs, isvg) = best_of(runs, || inferno_svg(&new, "t"));
    println!(
        "flame graph   fsscale {:>10}  {:>9} bytes  {:>6} frames drawn",
        ms(ours),
        svg.len(),
        svg.matches("<rect").count() - 1
    );
    println!(
        "flame graph   inferno {:>10}  {:>9} bytes  {:>6} frames drawn",
        ms(theirs),
        isvg.len(),
        isvg.matches("<rect").count() - 1
    );
    let (ours, svg) = best_of(runs, || {
        report::flame::differential_flame_graph_svg(&base, &new, "t", report::flame::ON_CPU).into_string()
    });
    let (theirs, isvg) = best_of(runs, || inferno_differential_svg(&base, &new, "t"));
    println!("differential  fsscale {:>10}  {:>9} bytes", ms(ours), svg.len());
    println!("differential  inferno {:>10}  {:>9} bytes", ms(theirs), isvg.len());
    println!("inferno's SVG carries a script: {}", isvg.contains("<script"));

    // A received results file names its frames: does either let one out of the SVG?
    let hostile = BTreeMap::from([
        ("main;</title><script>alert(1)</script>".to_string(), 5),
        ("main;x\" onload=\"alert(2)".to_string(), 3),
        ("main;]]><script>alert(3)</script>".to_string(), 2),
    ]);
    let svg = report::flame::flame_graph_svg(&hostile, "<b>t</b>", report::flame::ON_CPU).into_string();
    let isvg = inferno_svg(&hostile, "<b>t</b>");
    let planted =
        |svg: &str| ["<script>alert", "onload=\"alert", "<b>t</b>"].iter().filter(|bad| svg.contains(*bad)).count();
    println!("hostile frame names left raw: fsscale {}, inferno {}", planted(&svg), planted(&isvg));
    Ok(())
}

/// Synthetic folded stacks: `stacks` stacks over a tree of kernel names,
/// `depth` frames at most, so a flame graph's size can be set.
fn synthetic(args: &[String]) -> Result<()> {
    let stacks: usize = args.first().map_or(Ok(20_000), |s| s.parse()).context("stacks")?;
    let seed: u64 = args.get(1).map_or(Ok(1), |s| s.parse()).context("seed")?;
    let text = std::fs::read_to_string("/proc/kallsyms").context("/proc/kallsyms")?;
    let names: Vec<&str> =
        text.lines().filter_map(|l| l.split_whitespace().nth(2)).filter(|n| !n.starts_with("__")).take(4000).collect();
    let mut rng = Lcg(seed);
    let mut out = BTreeMap::new();
    while out.len() < stacks {
        let depth = 4 + rng.below(36) as usize;
        // A narrow trunk and a wide crown, as a syscall profile has.
        let stack: Vec<&str> = (0..depth)
            .map(|level| names[rng.below(((level * level) as u64 + 2).min(names.len() as u64)) as usize])
            .collect();
        *out.entry(stack.join(";")).or_insert(0u64) += 1 + rng.below(50);
    }
    for (stack, n) in out {
        println!("{stack} {n}");
    }
    Ok(())
}

fn kernel(_: &[String]) -> Result<()> {
    use blazesym::symbolize::source::{Kernel, Source};
    use blazesym::symbolize::{Input, Symbolized, Symbolizer};
    use blazesym::MaybeDefault;

    // This kernel's symbols, and two of a module (this VM loads none) as
    // a `--fs xfs` mount would add them: both read the same file.
    let mut text = std::fs::read_to_string("/proc/kallsyms").context("/proc/kallsyms")?;
    text.push_str("ffffffffc0a10000 t xfs_file_release\t[xfs]\nffffffffc0a10200 t xfs_ilock\t[xfs]\n");
    let path = std::env::temp_dir().join(format!("kallsyms-{}", std::process::id()));
    std::fs::write(&path, &text)?;
    let table = kallsyms::KernelSymbols::parse(&text)?;
    // Addresses inside functions (the start and a few bytes in), and the
    // addresses of static variables, as a lock profile sees them.
    let mut rng = Lcg(7);
    let mut code = Vec::new();
    let mut data = Vec::new();
    let mut module_code = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(address) = f.first().and_then(|a| u64::from_str_radix(a, 16).ok()) else { continue };
        if address == 0 {
            continue;
        }
        match f.get(1).copied() {
            Some("t" | "T") if f.len() > 3 || rng.below(20) == 0 => {
                code.push(address + rng.below(8));
                module_code += usize::from(f.len() > 3);
            }
            Some("d" | "D" | "b" | "B") => data.push(address),
            _ => {}
        }
    }
    println!(
        "kallsyms: {} lines; {} code addresses ({} in modules), {} data",
        text.lines().count(),
        code.len(),
        module_code,
        data.len()
    );

    let (ours_load, ours) = best_of(5, || {
        let text = std::fs::read_to_string(&path).unwrap();
        kallsyms::KernelSymbols::parse(&text).unwrap()
    });
    let (ours_lookup, our_names) =
        best_of(5, || code.iter().map(|&a| ours.function(a).map(str::to_string)).collect::<Vec<_>>());
    let source = Source::Kernel(Kernel {
        kallsyms: MaybeDefault::Some(path.clone()),
        vmlinux: MaybeDefault::None,
        kaslr_offset: Some(0),
        debug_syms: false,
        ..Default::default()
    });
    // A new symbolizer each time: a profile's first lookup pays the load.
    let (theirs_first, _) =
        best_of(5, || Symbolizer::new().symbolize(&source, Input::AbsAddr(&code[..1])).unwrap().len());
    let symbolizer = Symbolizer::new();
    symbolizer.symbolize(&source, Input::AbsAddr(&code[..1]))?;
    let (theirs_lookup, syms) = best_of(5, || symbolizer.symbolize(&source, Input::AbsAddr(&code)).unwrap());
    let their_names: Vec<Option<String>> = syms
        .iter()
        .map(|s| match s {
            Symbolized::Sym(sym) => Some(sym.name.to_string()),
            _ => None,
        })
        .collect();
    println!("load        fsscale {:>10}   blazesym (first lookup) {:>10}", ms(ours_load), ms(theirs_first));
    println!("{} lookups fsscale {:>10}   blazesym {:>10}", code.len(), ms(ours_lookup), ms(theirs_lookup));
    let base = |n: &str| n.split(' ').next().unwrap_or(n).to_string();
    let agree =
        our_names.iter().zip(&their_names).filter(|(a, b)| a.as_deref().map(base) == b.as_deref().map(base)).count();
    println!("function names agree: {agree} of {}", code.len());
    for (a, (o, t)) in code
        .iter()
        .zip(our_names.iter().zip(&their_names))
        .filter(|(_, (o, t))| o.as_deref().map(base) != t.as_deref().map(base))
        .take(5)
    {
        println!("  {a:#x}: fsscale {o:?}, blazesym {t:?}");
    }
    let module_named = our_names.iter().flatten().filter(|n| n.ends_with(']')).count();
    let theirs_module = their_names.iter().flatten().filter(|n| n.ends_with(']')).count();
    println!("module functions named with their module: fsscale {module_named}, blazesym {theirs_module}");
    // A lock profile names a static lock from its address.
    let ours_vars = data.iter().filter(|&&a| table.variable(a).is_some()).count();
    let theirs = symbolizer.symbolize(&source, Input::AbsAddr(&data))?;
    let theirs_vars = theirs.iter().filter(|s| matches!(s, Symbolized::Sym(_))).count();
    println!(
        "static variables: fsscale names {ours_vars} of {} as variables and {} as functions; blazesym names {theirs_vars} (as functions: its kallsyms reader keeps no type)",
        data.len(),
        data.iter().filter(|&&a| ours.function(a).is_some()).count()
    );
    // Beyond the kernel's last symbol.
    let past = [u64::MAX - 4096];
    let theirs = symbolizer.symbolize(&source, Input::AbsAddr(&past))?;
    println!(
        "an address past the kernel: fsscale {:?}, blazesym {:?}",
        ours.function(past[0]),
        theirs.first().and_then(|s| match s {
            Symbolized::Sym(sym) => Some(sym.name.to_string()),
            _ => None,
        })
    );
    let _ = std::fs::remove_file(&path);
    Ok(())
}

fn user(args: &[String]) -> Result<()> {
    use blazesym::symbolize::source::{Elf, Source};
    use blazesym::symbolize::{Input, Symbolized, Symbolizer};
    use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags, SymbolKind};

    let Some(path) = args.first() else { bail!("user ELF") };
    let bytes = std::fs::read(path).with_context(|| format!("reading {path}"))?;
    let file = object::File::parse(bytes.as_slice())?;
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .filter(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0))
        .map(|s| (s.file_range().0, s.address(), s.file_range().1))
        .collect();
    // File offsets inside functions, as a profile's mmap records give them.
    let mut rng = Lcg(11);
    let mut functions: Vec<(u64, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0 && s.size() > 0)
        .map(|s| (s.address(), s.size()))
        .collect();
    functions.sort_unstable();
    functions.dedup();
    let offsets: Vec<u64> = functions
        .iter()
        .filter_map(|&(address, size)| {
            if rng.below(4) != 0 {
                return None;
            }
            let at = address + rng.below(size);
            let &(offset, vaddr, _) = segments.iter().find(|(_, v, s)| *v <= at && at < v + s)?;
            Some(at - vaddr + offset)
        })
        .take(20_000)
        .collect();
    println!("{path}: {} MB, {} functions; {} file offsets", bytes.len() >> 20, functions.len(), offsets.len());
    drop(file);

    const BASE: u64 = 0x1000_0000_0000;
    let maps = || {
        let mut maps = usersyms::ProcessMaps::default();
        for &(offset, _, size) in &segments {
            let start = BASE + offset;
            maps.record(1, usersyms::Mapping { start, end: start + size, offset, path: path.clone() });
        }
        maps
    };
    // The first load reads the file; later ones in the process hit fsscale's cache, so each is timed once, fresh.
    let start = Instant::now();
    let ours = usersyms::UserSymbols::of(maps());
    let ours_load = start.elapsed();
    let (ours_lookup, our_names) =
        best_of(5, || offsets.iter().map(|&o| ours.function(1, BASE + o)).collect::<Vec<_>>());

    let report = |label: &str, debug_syms: bool| -> Result<Vec<Option<String>>> {
        let source = Source::Elf(Elf { debug_syms, ..Elf::new(path) });
        let (first, _) = best_of(3, || {
            Symbolizer::builder()
                .enable_code_info(debug_syms)
                .build()
                .symbolize(&source, Input::FileOffset(&offsets[..1]))
                .unwrap()
                .len()
        });
        let symbolizer = Symbolizer::builder().enable_code_info(debug_syms).build();
        symbolizer.symbolize(&source, Input::FileOffset(&offsets[..1]))?;
        let (lookup, syms) = best_of(3, || symbolizer.symbolize(&source, Input::FileOffset(&offsets)).unwrap());
        println!("blazesym {label:<14} first lookup {:>10}   {} lookups {:>10}", ms(first), offsets.len(), ms(lookup));
        Ok(syms
            .iter()
            .map(|s| match s {
                Symbolized::Sym(sym) => Some(sym.name.to_string()),
                _ => None,
            })
            .collect())
    };
    println!("fsscale                 load {:>10}   {} lookups {:>10}", ms(ours_load), offsets.len(), ms(ours_lookup));
    let theirs = report("(symbol table)", false)?;
    let with_dwarf = report("(DWARF)", true)?;
    // Names compared without a Rust symbol's hash suffix, which fsscale drops ({:#}).
    let plain = |n: &str| format!("{:#}", rustc_demangle::demangle(n));
    for (label, names) in [("symbol table", &theirs), ("DWARF", &with_dwarf)] {
        let agree =
            our_names.iter().zip(names).filter(|(a, b)| a.as_deref() == b.as_deref().map(plain).as_deref()).count();
        println!("names agree with blazesym's {label}: {agree} of {}", offsets.len());
        for (o, (a, b)) in offsets
            .iter()
            .zip(our_names.iter().zip(names))
            .filter(|(_, (a, b))| a.as_deref() != b.as_deref().map(plain).as_deref())
            .take(3)
        {
            println!("  {o:#x}: fsscale {a:?}, blazesym {b:?}");
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("flames") => flames(&args[1..]),
        Some("synthetic") => synthetic(&args[1..]),
        Some("kernel") => kernel(&args[1..]),
        Some("user") => user(&args[1..]),
        _ => bail!("usage: symbols-and-flames flames FOLDED [BASE] | synthetic [STACKS [SEED]] | kernel | user ELF"),
    }
}
