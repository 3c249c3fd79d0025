//! Plain-text tables for terminal output: left-aligned columns, one header row.

/// A table being built.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are blank, extra ones dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The rendered table, ending in a newline; cells are kept on one line.
    pub fn render(&self) -> String {
        let clean = |s: &str| s.replace(['\n', '\r', '\t'], " ");
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().take(columns).enumerate() {
                widths[i] = widths[i].max(clean(cell).chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &mut dyn Iterator<Item = String>| {
            let mut text = String::new();
            for (i, cell) in cells.enumerate().take(columns) {
                if i + 1 == columns {
                    text.push_str(&cell);
                } else {
                    let pad = widths[i].saturating_sub(cell.chars().count());
                    text.push_str(&cell);
                    text.push_str(&" ".repeat(pad + 2));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&mut self.header.iter().cloned());
        for row in &self.rows {
            let mut cells = (0..columns).map(|i| row.get(i).map(|c| clean(c)).unwrap_or_default());
            line(&mut cells);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_cells_stay_on_one_line() {
        let mut table = Table::new(&["ID", "TEXT"]);
        table.row(vec!["1".into(), "short".into()]);
        table.row(vec!["1234".into(), "two\nlines".into()]);
        assert_eq!(table.render(), "ID    TEXT\n1     short\n1234  two lines\n");
    }
}
