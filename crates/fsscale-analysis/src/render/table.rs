//! A plain aligned text table, sized to its contents.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

pub struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
    indent: usize,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table { columns: columns.iter().map(|(h, a)| (h.to_string(), *a)).collect(), rows: Vec::new(), indent: 2 }
    }

    /// Spaces before every line (2 unless set).
    pub(crate) fn indented(mut self, indent: usize) -> Table {
        self.indent = indent;
        self
    }

    /// A cell is one line: a newline or other control character in it (a
    /// received label's) is shown as an escape, so it cannot break the row,
    /// misalign the columns or hide another row.
    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.columns.len(), "row width must match the header");
        let cells = cells
            .into_iter()
            .map(|c| match crate::escape::for_terminal(&c) {
                std::borrow::Cow::Borrowed(_) => c,
                std::borrow::Cow::Owned(escaped) => escaped,
            })
            .collect();
        self.rows.push(cells);
    }

    /// Renders with two spaces between columns and no trailing spaces.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|c| {
                let cells = self.rows.iter().map(|r| r[c].chars().count());
                cells.chain([self.columns[c].0.chars().count()]).max().unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let header: Vec<String> = self.columns.iter().map(|(h, _)| h.clone()).collect();
        for cells in std::iter::once(&header).chain(&self.rows) {
            let mut line = " ".repeat(self.indent);
            for (c, cell) in cells.iter().enumerate() {
                if c > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(widths[c] - cell.chars().count());
                match self.columns[c].1 {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&[("name", Align::Left), ("value", Align::Right)]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["longer".into(), "12345678".into()]);
        assert_eq!(t.render(), "  name       value\n  a              1\n  longer  12345678\n");
    }
}
