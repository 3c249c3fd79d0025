//! What the program prints for people. Stored and user-given text can hold
//! characters that steer a terminal (ESC starts a sequence that clears the screen or
//! sets the window title) or hide and reorder what is shown (bidirectional
//! overrides, zero-width characters): every human-readable line goes through
//! [`text`] or [`note`], which show each such character escaped (`\u{1b}`), and a
//! table cell or a [`Shown`] value escapes line breaks too. JSON goes out through
//! [`json`] as serde writes it (it escapes control characters itself).

use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::process::ExitCode;

/// Whether `c` is shown escaped: C0 and C1 controls and DEL; the bidirectional
/// controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069); zero-width and
/// invisible format characters (U+180E, U+200B–U+200D, U+2060–U+206F, U+FEFF,
/// U+FFF9–U+FFFB, the tags U+E0000–U+E007F); the line and paragraph separators
/// (U+2028, U+2029).
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// A writer that shows every unsafe character of what passes through it escaped:
/// `\n`, `\r` and `\t` for those three (a line feed kept as it is when `lines` is
/// set: the program's own line breaks), `\u{hex}` for the rest.
struct Escaping<'w, W: fmt::Write + ?Sized> {
    inner: &'w mut W,
    lines: bool,
}

impl<W: fmt::Write + ?Sized> fmt::Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| is_unsafe(c)) {
            self.inner.write_str(&rest[..at])?;
            match c {
                '\n' if self.lines => self.inner.write_char('\n')?,
                '\n' => self.inner.write_str("\\n")?,
                '\r' => self.inner.write_str("\\r")?,
                '\t' => self.inner.write_str("\\t")?,
                c => write!(self.inner, "\\u{{{:x}}}", u32::from(c))?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        self.inner.write_str(rest)
    }
}

/// A value shown with every unsafe character escaped, line feeds included: stored
/// or user-given text printed inside a line of the program's own.
#[derive(Clone, Copy, Debug)]
pub struct Shown<T>(pub T);

impl<T: fmt::Display> fmt::Display for Shown<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            Escaping {
                inner: f,
                lines: false,
            },
            "{}",
            self.0
        )
    }
}

/// `text` with every unsafe character escaped, line feeds included.
pub fn escape(text: &str) -> String {
    Shown(text).to_string()
}

/// The formatted `args`, every unsafe character escaped but line feeds.
fn lines(args: fmt::Arguments<'_>) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = Escaping {
        inner: &mut out,
        lines: true,
    }
    .write_fmt(args);
    out
}

/// Writes human-readable text to standard output, every unsafe character escaped
/// but line feeds. A closed pipe (`colmem audit tail | head -1`) is an error that
/// [`crate::exit::closed_pipe`] recognises, so the command ends quietly where
/// `print!` would panic.
pub fn text(args: fmt::Arguments<'_>) -> std::io::Result<()> {
    std::io::stdout().lock().write_all(lines(args).as_bytes())
}

/// Writes a human-readable note or error to standard error, escaped as [`text`] is.
pub fn note(args: fmt::Arguments<'_>) {
    // Nothing is left to tell of a standard error that cannot be written.
    let _ = std::io::stderr().lock().write_all(lines(args).as_bytes());
}

/// Writes one JSON value and a line feed to standard output, as serde writes it.
pub fn json(value: &serde_json::Value) -> anyhow::Result<()> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    std::io::stdout().lock().write_all(&line)?;
    Ok(())
}

/// Reports a command line clap refused, escaped (its message may quote what was
/// given), or prints the help or version asked for; the exit code clap gives.
pub fn usage(error: &clap::Error) -> ExitCode {
    if error.use_stderr() {
        note(format_args!("{}", error.render()));
    } else {
        // Help and version quote nothing given.
        let _ = error.print();
    }
    ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(crate::exit::INTERNAL))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unsafe_character_is_shown_escaped() {
        for (text, shown) in [
            (
                "plain text, ünïcode and emoji 🙂",
                "plain text, ünïcode and emoji 🙂",
            ),
            (
                "\u{1b}]0;pwned\u{7}\u{1b}[2J",
                "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J",
            ),
            ("a\nb\rc\td", "a\\nb\\rc\\td"),
            ("\u{202e}evil\u{202c}", "\\u{202e}evil\\u{202c}"),
            ("\u{2066}x\u{2069}\u{61c}", "\\u{2066}x\\u{2069}\\u{61c}"),
            (
                "zero\u{200b}\u{200d}\u{2060}\u{feff}width",
                "zero\\u{200b}\\u{200d}\\u{2060}\\u{feff}width",
            ),
            ("\u{85}\u{9b}\u{7f}\u{0}", "\\u{85}\\u{9b}\\u{7f}\\u{0}"),
            ("\u{2028}\u{2029}", "\\u{2028}\\u{2029}"),
            ("tag\u{e0041}", "tag\\u{e0041}"),
        ] {
            assert_eq!(escape(text), shown, "{text:?}");
        }
    }

    #[test]
    fn lines_keep_their_line_feeds_and_nothing_else() {
        assert_eq!(
            lines(format_args!("{}\n{}\n", "a\u{1b}[1m", 7)),
            "a\\u{1b}[1m\n7\n"
        );
        assert_eq!(lines(format_args!("{}", Shown("x\ny"))), "x\\ny");
    }
}
