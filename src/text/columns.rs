//! kubectl-style aligned columns (no borders, flush left, two spaces apart), fitted to a terminal:
//! names (pods, nodes, jobs, zones, times) keep their width and are never cut or split, so that they
//! can be copied; sentences (reasons, details, verdicts) wrap between words in what is left.

use comfy_table::Table;

use super::wrap;

/// How wide the table may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Columns as wide as their content (a pipe, a file: what scripts and the docs see).
    Natural,
    /// At most this many characters a line where the names allow it: sentences wrap between
    /// words within their column.
    Fit(u16),
    /// `-o wide`: extra columns, never wrapped.
    Wide,
}

/// Narrower than this, a terminal gets natural widths: wrapping into a few characters helps no one.
const NARROWEST: u16 = 40;

impl Layout {
    /// The terminal's width (`$COLUMNS`, else the terminal's own) when stdout is one; natural
    /// widths for a pipe or a file, as kubectl, which never cuts what goes to a pipe.
    pub fn for_stdout() -> Layout {
        use std::io::IsTerminal;
        if !std::io::stdout().is_terminal() {
            return Layout::Natural;
        }
        let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
        Layout::for_terminal(columns.or_else(|| Table::new().width()))
    }

    /// A terminal `width` characters wide (unknown: `None`).
    pub fn for_terminal(width: Option<u16>) -> Layout {
        match width {
            Some(width) if width >= NARROWEST => Layout::Fit(width),
            _ => Layout::Natural,
        }
    }

    /// The width to fit, if any.
    pub fn width(self) -> Option<usize> {
        match self {
            Layout::Fit(width) => Some(usize::from(width)),
            Layout::Natural | Layout::Wide => None,
        }
    }

    /// `text` as a line of its own: wrapped between words to the terminal's width (the lines after
    /// the first indented by two spaces), as it is otherwise.
    pub fn line(self, text: &str) -> String {
        match self.width() {
            Some(width) => wrap(text, width, "  "),
            None => format!("{text}\n"),
        }
    }
}

/// Columns whose cells are sentences (or a kind and a name, `ReplicaSet shop/web-5d9c`), wrapped
/// between words to fit; every other column holds names or short values and keeps its width.
const SENTENCES: [&str; 11] = [
    "JOB",
    "NEXT CHANGE",
    "WINDOWS",
    "NEXT ROUND",
    "DRAIN",
    "DRAIN START",
    "REASON",
    "DETAIL",
    "HELD BY",
    "PROPOSED FOR",
    "VERDICT",
];

/// A sentence column is never narrowed below this (or its longest word): narrower, its lines read
/// as a list of words.
const NARROWEST_SENTENCE: usize = 16;

/// Space between two columns.
const GAP: usize = 2;

/// A table's header and rows, laid out when rendered.
#[derive(Clone, Debug, Default)]
pub struct Columns {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Columns {
    pub fn new(header: &[&str]) -> Columns {
        Columns {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn add_row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// The table's lines, at most `width` characters where the names allow it.
    pub fn render<'a>(&'a self, width: Option<usize>) -> String {
        use std::borrow::Cow;
        use unicode_width::UnicodeWidthStr;

        let widths = width.map(|width| self.fitted_widths(width));
        let wrapped = |column: usize, cell: &'a str| -> Cow<'a, str> {
            match widths
                .as_ref()
                .and_then(|w| w.get(column))
                .copied()
                .flatten()
            {
                Some(width) => Cow::Owned(wrap(cell, width, "").trim_end().to_owned()),
                None => Cow::Borrowed(cell),
            }
        };
        let rows: Vec<Vec<Cow<'a, str>>> = std::iter::once(
            self.header
                .iter()
                .map(|h| Cow::Borrowed(h.as_str()))
                .collect(),
        )
        .chain(self.rows.iter().map(|row| {
            row.iter()
                .enumerate()
                .map(|(column, cell)| wrapped(column, cell))
                .collect()
        }))
        .collect();
        let columns = self.header.len();
        let mut column_widths = vec![0; columns];
        for row in &rows {
            for (column, cell) in row.iter().enumerate().take(columns) {
                let widest = cell.lines().map(|l| l.width()).max().unwrap_or(0);
                column_widths[column] = column_widths[column].max(widest);
            }
        }
        // The last column is never padded: one long sentence there must not widen every line (a
        // large timeline's wide table held tens of gigabytes of spaces that way).
        let last = columns.saturating_sub(1);
        let mut out = String::new();
        let mut line = String::new();
        for row in &rows {
            let cells: Vec<Vec<&str>> = (0..columns)
                .map(|c| {
                    row.get(c)
                        .map_or_else(Vec::new, |cell| cell.lines().collect())
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(0).max(1);
            for index in 0..height {
                line.clear();
                for (column, lines) in cells.iter().enumerate() {
                    let part = lines.get(index).copied().unwrap_or("");
                    line.push_str(part);
                    if column < last {
                        let pad = column_widths[column] - part.width() + GAP;
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                }
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        out
    }

    /// Per column, the width its sentences wrap at (`None`: as wide as its content). Names keep
    /// their width; the sentence columns share what is left, the narrower keeping their own
    /// width, each at least its longest word.
    fn fitted_widths(&self, width: usize) -> Vec<Option<usize>> {
        let columns = self.header.len();
        let longest = |column: usize, measure: &dyn Fn(&str) -> usize| {
            self.rows
                .iter()
                .filter_map(|row| row.get(column))
                .map(|cell| measure(cell))
                .chain([self.header[column].chars().count()])
                .max()
                .unwrap_or(0)
        };
        let chars = |cell: &str| cell.chars().count();
        let word = |cell: &str| {
            cell.split(' ')
                .map(|w| w.chars().count())
                .max()
                .unwrap_or(0)
        };
        let sentence: Vec<bool> = self
            .header
            .iter()
            .map(|h| SENTENCES.contains(&h.as_str()))
            .collect();
        let names: usize = (0..columns)
            .filter(|&c| !sentence[c])
            .map(|c| longest(c, &chars))
            .sum();
        let left = width
            .saturating_sub(names)
            .saturating_sub(GAP * columns.saturating_sub(1));
        // Each sentence column first gets the least it takes: a readable width where the terminal
        // has room for that, else its longest word (or header); what is left goes to those that
        // want more, the least hungry first.
        let sentences: Vec<(usize, usize, usize)> = (0..columns)
            .filter(|&c| sentence[c])
            .map(|c| {
                let natural = longest(c, &chars);
                let whole = longest(c, &word).max(self.header[c].chars().count());
                (c, natural, whole)
            })
            .collect();
        let readable = |natural: usize, whole: usize| NARROWEST_SENTENCE.min(natural).max(whole);
        let room = sentences
            .iter()
            .map(|&(_, natural, whole)| readable(natural, whole))
            .sum::<usize>()
            <= left;
        let mut wanted: Vec<(usize, usize, usize)> = sentences
            .into_iter()
            .map(|(c, natural, whole)| {
                let least = if room {
                    readable(natural, whole)
                } else {
                    whole
                };
                (natural.saturating_sub(least), c, least)
            })
            .collect();
        wanted.sort_unstable();
        let mut extra = left.saturating_sub(wanted.iter().map(|(_, _, least)| least).sum());
        let mut widths = vec![None; columns];
        let mut sharing = wanted.len();
        for (more, column, least) in wanted {
            let given = more.min(extra / sharing.max(1));
            widths[column] = Some(least + given);
            extra -= given;
            sharing -= 1;
        }
        widths
    }
}

/// `title`, the table's lines, and a blank line.
pub fn section(out: &mut String, title: &str, columns: &Columns, layout: Layout) {
    out.push_str(title);
    out.push('\n');
    out.push_str(&columns.render(layout.width()));
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Columns {
        let mut columns = Columns::new(&["POD", "NODE", "JOB", "DETAIL"]);
        columns.add_row([
            "analytics/etl-nightly-5d9c7b8f4-7ctzq",
            "yarn-a-1",
            "ReplicaSet analytics/etl-nightly-5d9c7b8f4",
            "maxUnavailable 40%; 4 pods, 4 running, 0 unavailable, 2 already planned this round; \
             waits for a later round: zone yarn-a's next round (evictPeriod 2m0s)",
        ]);
        columns.add_row([
            "ml/hpo-sweep-trial-0",
            "yarn-b-1",
            "PodGroup ml/hpo-sweep",
            "short",
        ]);
        columns
    }

    /// A long cell in the last column lengthens its own line only: no line is padded to it.
    #[test]
    fn the_last_column_is_never_padded() {
        let mut columns = Columns::new(&["POD", "DETAIL"]);
        columns.add_row(["ns/a", "short"]);
        columns.add_row(["ns/bb", &"x".repeat(10_000)]);
        columns.add_row(["ns/ccc", ""]);
        let text = columns.render(None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "POD     DETAIL");
        assert_eq!(lines[1], "ns/a    short");
        assert_eq!(lines[2].len(), 8 + 10_000);
        assert_eq!(lines[3], "ns/ccc");
        assert_eq!(text.len(), 15 + 14 + 10_009 + 7);
    }

    #[test]
    fn names_keep_their_width_and_sentences_wrap_between_words() {
        let natural = demo().render(None);
        assert_eq!(natural.lines().count(), 3, "{natural}");
        let fitted = demo().render(Some(120));
        for line in fitted.lines() {
            assert!(
                line.chars().count() <= 120,
                "{} chars: {line}",
                line.chars().count()
            );
        }
        // Names whole, on the row's first line; the detail's words in order, none split.
        let first = fitted.lines().nth(1).unwrap();
        assert!(first.starts_with("analytics/etl-nightly-5d9c7b8f4-7ctzq  yarn-a-1  ReplicaSet"));
        let detail_at = fitted.lines().next().unwrap().find("DETAIL").unwrap();
        let words: Vec<&str> = fitted
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("ml/"))
            .flat_map(|l| l[detail_at..].split_whitespace())
            .collect();
        let table = demo();
        let expected: Vec<&str> = table.rows[0][3].split_whitespace().collect();
        assert_eq!(words, expected);
        // Names wider than the terminal are not cut: the sentences keep a readable width, and a
        // job wraps between its kind and its name.
        let narrow = demo().render(Some(60));
        let words: Vec<&str> = narrow.split_whitespace().collect();
        for name in [
            "analytics/etl-nightly-5d9c7b8f4-7ctzq",
            "analytics/etl-nightly-5d9c7b8f4",
        ] {
            assert!(words.contains(&name), "{name}: {narrow}");
        }
    }

    #[test]
    fn a_terminal_too_narrow_to_wrap_into_gets_natural_widths() {
        assert_eq!(Layout::for_terminal(Some(30)), Layout::Natural);
        assert_eq!(Layout::for_terminal(None), Layout::Natural);
        assert_eq!(Layout::for_terminal(Some(80)), Layout::Fit(80));
    }
}
