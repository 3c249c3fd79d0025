//! Plain-text tables for terminal output: left-aligned columns, one header row.
//! Every cell is shown through [`output::escape`](crate::output::escape), so stored
//! text cannot steer the terminal, and a line break in a cell cannot break the table.

use crate::output::escape;

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
            header: header.iter().map(|h| escape(h)).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are blank, extra ones dropped), each cell escaped.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows
            .push(cells.iter().map(|cell| escape(cell)).collect());
    }

    /// The rendered table, ending in a newline; cells are kept on one line.
    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().take(columns).enumerate() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &mut dyn Iterator<Item = &str>| {
            let mut text = String::new();
            for (i, cell) in cells.enumerate().take(columns) {
                text.push_str(cell);
                if i + 1 < columns {
                    let pad = widths[i].saturating_sub(cell.chars().count());
                    text.push_str(&" ".repeat(pad + 2));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&mut self.header.iter().map(String::as_str));
        for row in &self.rows {
            let mut cells = (0..columns).map(|i| row.get(i).map_or("", String::as_str));
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
        assert_eq!(
            table.render(),
            "ID    TEXT\n1     short\n1234  two\\nlines\n"
        );
    }

    #[test]
    fn a_cell_cannot_steer_the_terminal() {
        let mut table = Table::new(&["ID", "TEXT"]);
        table.row(vec!["\u{202e}1".into(), "\u{1b}[2J\u{7}x\u{200b}".into()]);
        assert_eq!(
            table.render(),
            "ID         TEXT\n\\u{202e}1  \\u{1b}[2J\\u{7}x\\u{200b}\n"
        );
    }
}
