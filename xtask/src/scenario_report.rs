//! The scenarios' HTML reports: tables and inline SVG plots in one self-contained file,
//! written to `target/scenarios/NAME/index.html`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// One block of a report.
#[derive(Debug)]
pub enum Block {
    /// A paragraph of text.
    Text(String),
    /// A table: header row, then rows.
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// Lines over a numeric x axis.
    Lines {
        title: String,
        x_label: String,
        y_label: String,
        series: Vec<(String, Vec<(f64, f64)>)>,
    },
    /// Grouped bars: one group per category, one bar per series.
    Bars {
        title: String,
        y_label: String,
        categories: Vec<String>,
        series: Vec<(String, Vec<f64>)>,
    },
}

/// A report: a title and blocks, in order.
#[derive(Debug)]
pub struct Report {
    pub title: String,
    pub blocks: Vec<Block>,
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];
const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 44.0;

/// `text` as HTML text or a quoted attribute value: every character that could
/// open a tag, an entity or end a quote is written as an entity. Every piece of
/// text a report holds (titles, paragraphs, cells, labels, names) passes here.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A round upper bound for an axis.
fn nice_max(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    for step in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if step * magnitude >= max {
            return step * magnitude;
        }
    }
    10.0 * magnitude
}

fn axes(svg: &mut String, title: &str, x_label: &str, y_label: &str, y_max: f64) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let _ = write!(
        svg,
        r#"<text x="{}" y="18" font-size="14" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        escape(title)
    );
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}" stroke="#333"/><line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="#333"/>"##,
        TOP + plot_h,
        TOP + plot_h,
        LEFT + plot_w,
        TOP + plot_h
    );
    for i in 0..=4 {
        let value = y_max * f64::from(i) / 4.0;
        let y = TOP + plot_h - plot_h * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 4.0,
            y + 4.0,
            trim(value)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 6.0,
        escape(x_label)
    );
    let _ = write!(
        svg,
        r#"<text x="14" y="{}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {})">{}</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        escape(y_label)
    );
}

fn legend(svg: &mut String, names: &[&str]) {
    for (i, name) in names.iter().enumerate() {
        let y = TOP + 10.0 + 18.0 * i as f64;
        let x = WIDTH - RIGHT + 12.0;
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}" font-size="11">{}</text>"#,
            y - 10.0,
            COLORS[i % COLORS.len()],
            x + 16.0,
            y,
            escape(name)
        );
    }
}

fn trim(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn lines_svg(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let points = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x_min, mut x_max, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y) in points {
        x_min = x_min.min(x);
        x_max = x_max.max(x);
        y_max = y_max.max(y);
    }
    if !x_min.is_finite() {
        (x_min, x_max) = (0.0, 1.0);
    }
    if x_max <= x_min {
        x_max = x_min + 1.0;
    }
    let y_max = nice_max(y_max);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif">"#
    );
    axes(&mut svg, title, x_label, y_label, y_max);
    for i in 0..=4 {
        let value = x_min + (x_max - x_min) * f64::from(i) / 4.0;
        let x = LEFT + plot_w * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r#"<text x="{x}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
            TOP + plot_h + 16.0,
            trim(value)
        );
    }
    for (i, (_, points)) in series.iter().enumerate() {
        let path: Vec<String> = points
            .iter()
            .map(|&(x, y)| {
                format!(
                    "{:.1},{:.1}",
                    LEFT + plot_w * (x - x_min) / (x_max - x_min),
                    TOP + plot_h - plot_h * (y / y_max).clamp(0.0, 1.0)
                )
            })
            .collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#,
            COLORS[i % COLORS.len()],
            path.join(" ")
        );
    }
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    legend(&mut svg, &names);
    svg.push_str("</svg>");
    svg
}

fn bars_svg(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> String {
    let y_max = nice_max(
        series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(0.0, f64::max),
    );
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif">"#
    );
    axes(&mut svg, title, "", y_label, y_max);
    let group_w = plot_w / categories.len().max(1) as f64;
    let bar_w = group_w * 0.8 / series.len().max(1) as f64;
    for (c, category) in categories.iter().enumerate() {
        let group_x = LEFT + group_w * c as f64 + group_w * 0.1;
        for (s, (_, values)) in series.iter().enumerate() {
            let value = values.get(c).copied().unwrap_or(0.0);
            let h = plot_h * (value / y_max).clamp(0.0, 1.0);
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                group_x + bar_w * s as f64,
                TOP + plot_h - h,
                bar_w,
                h,
                COLORS[s % COLORS.len()],
                trim(value)
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
            LEFT + group_w * (c as f64 + 0.5),
            TOP + plot_h + 16.0,
            escape(category)
        );
    }
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    legend(&mut svg, &names);
    svg.push_str("</svg>");
    svg
}

impl Report {
    /// The report as one HTML document.
    pub fn html(&self) -> String {
        let mut html = format!(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{0}</title>\
             <style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}\
             table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}\
             th{{background:#f4f4f4}}</style></head><body><h1>{0}</h1>\n",
            escape(&self.title)
        );
        for block in &self.blocks {
            match block {
                Block::Text(text) => {
                    let _ = writeln!(html, "<p>{}</p>", escape(text));
                }
                Block::Table { header, rows } => {
                    html.push_str("<table><tr>");
                    for h in header {
                        let _ = write!(html, "<th>{}</th>", escape(h));
                    }
                    html.push_str("</tr>");
                    for row in rows {
                        html.push_str("<tr>");
                        for cell in row {
                            let _ = write!(html, "<td>{}</td>", escape(cell));
                        }
                        html.push_str("</tr>");
                    }
                    html.push_str("</table>\n");
                }
                Block::Lines {
                    title,
                    x_label,
                    y_label,
                    series,
                } => {
                    html.push_str(&lines_svg(title, x_label, y_label, series));
                    html.push('\n');
                }
                Block::Bars {
                    title,
                    y_label,
                    categories,
                    series,
                } => {
                    html.push_str(&bars_svg(title, y_label, categories, series));
                    html.push('\n');
                }
            }
        }
        html.push_str("</body></html>\n");
        html
    }

    /// Writes `index.html` into `target/scenarios/NAME/` under `root` and returns its path.
    /// Writes the report, prints where, prints `output` as the JSON last line when
    /// asked, and fails when the checker counted permission violations.
    pub fn publish<T: serde::Serialize>(
        &self,
        root: &Path,
        name: &str,
        json: bool,
        output: &T,
        violations: usize,
    ) -> Result<()> {
        let path = self.write(root, name)?;
        println!("report: {}", path.display());
        if json {
            println!("{}", serde_json::to_string(output)?);
        }
        anyhow::ensure!(violations == 0, "{violations} permission violations");
        Ok(())
    }

    pub fn write(&self, root: &Path, name: &str) -> Result<PathBuf> {
        let dir = root.join("target").join("scenarios").join(name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("index.html");
        std::fs::write(&path, self.html())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}

/// Prints a fixed-width table.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.len());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        println!("  {}", padded.join("  "));
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_html_with_inline_svg() {
        let report = Report {
            title: "t <x>".into(),
            blocks: vec![
                Block::Table {
                    header: vec!["a".into()],
                    rows: vec![vec!["1".into()]],
                },
                Block::Lines {
                    title: "l".into(),
                    x_label: "x".into(),
                    y_label: "y".into(),
                    series: vec![("s".into(), vec![(0.0, 1.0), (1.0, 2.0)])],
                },
                Block::Bars {
                    title: "b".into(),
                    y_label: "y".into(),
                    categories: vec!["c".into()],
                    series: vec![("s".into(), vec![3.0])],
                },
            ],
        };
        let html = report.html();
        assert!(html.contains("<h1>t &lt;x&gt;</h1>"));
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(html.contains("<polyline"));
        assert!(html.contains("<rect x="));
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(0.7), 1.0);
        assert_eq!(nice_max(23.0), 25.0);
    }

    /// Stored text in any text-bearing part of a report (a fragment's words in a
    /// paragraph or a cell, a principal's name in a legend) stays text: no tag, no
    /// attribute, no entity of its own.
    #[test]
    fn stored_text_is_escaped_everywhere_in_a_report() {
        let evil = "<script>alert('x')</script>\"&amp;<img src=x onerror=y>";
        let t = || evil.to_owned();
        let report = Report {
            title: t(),
            blocks: vec![
                Block::Text(t()),
                Block::Table {
                    header: vec![t()],
                    rows: vec![vec![t(), t()]],
                },
                Block::Lines {
                    title: t(),
                    x_label: t(),
                    y_label: t(),
                    series: vec![(t(), vec![(0.0, 1.0)])],
                },
                Block::Bars {
                    title: t(),
                    y_label: t(),
                    categories: vec![t()],
                    series: vec![(t(), vec![1.0])],
                },
            ],
        };
        let html = report.html();
        let shown = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;amp;&lt;img src=x onerror=y&gt;";
        // Title (twice), paragraph, header, two cells, two plot titles, two axis
        // labels and the bar chart's y label, two legends, one category.
        assert_eq!(html.matches(shown).count(), 14, "{html}");
        for raw in ["<script", "<img", "'x'", "\"&amp;"] {
            assert!(!html.contains(raw), "{raw} in {html}");
        }
    }
}
