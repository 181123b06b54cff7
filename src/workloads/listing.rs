//! The workload catalogue shown by `fsscale list`.

use super::Catalogue;
use super::Workload;

/// One block per workload: name and the exact op, then what each sharing level shares.
pub fn render_catalogue() -> String {
    let width = Workload::ALL.iter().map(|w| w.name().len()).max().unwrap_or(0);
    let mut out = String::new();
    let mut family = "";
    for workload in Workload::ALL {
        let d = workload.describe();
        if d.family != family {
            if !family.is_empty() {
                out.push('\n');
            }
            family = d.family;
            out.push_str(&format!("{family}:\n"));
        }
        out.push_str(&format!("  {:width$}  one op = {}\n", workload.name(), d.op));
        let pad = " ".repeat(width + 4);
        out.push_str(&format!("{pad}private: {}\n", d.private));
        for (label, level) in [("shared: ", d.shared), ("same:   ", d.same)] {
            match level {
                Ok(text) => out.push_str(&format!("{pad}{label} {text}\n")),
                Err(reason) => out.push_str(&format!("{pad}{label} refused ({reason})\n")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_workload_with_its_op_and_sharing() {
        let text = render_catalogue();
        for w in Workload::ALL {
            let line = text.lines().find(|l| l.trim_start().starts_with(&format!("{} ", w.name()))).unwrap();
            assert!(line.contains(&format!("one op = {}", w.describe().op)), "{line}");
        }
        assert_eq!(text.matches("private: ").count(), Workload::ALL.len());
        assert!(text.starts_with("metadata:\n  stat               one op = fstatat() of a regular file\n"));
        assert!(text.contains("same:    refused (every worker would create and unlink one name)"));
    }
}
