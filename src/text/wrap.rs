//! Text for people: sentences wrapped between words.

/// The column sentences wrap at: a terminal's 100, and what a code block in a page shows whole.
pub const WIDTH: usize = 100;

/// `text` in lines of at most `width` characters, broken between words only (names and instants stay
/// whole, so they can be copied), each line after the first indented by `indent`. A word longer than
/// the line stands alone on its own.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_owned();
        } else if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn sentences_wrap_between_words_never_inside_one() {
        let text = "- Policy p (DryRun): gate cooldown stops ml/resnet-train-worker-3 until 2026-11-23T09:42:40Z.";
        let wrapped = wrap(text, 40, "  ");
        assert_eq!(
            wrapped,
            "- Policy p (DryRun): gate cooldown stops\n  ml/resnet-train-worker-3 until\n  2026-11-23T09:42:40Z.\n"
        );
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 40),
            "{wrapped}"
        );
        // The words, in order, and nothing else.
        let words: Vec<&str> = wrapped.split_whitespace().collect();
        assert_eq!(words, text.split_whitespace().collect::<Vec<_>>());
        // A word longer than the line is kept whole, on a line of its own.
        assert_eq!(wrap("a verylongword b", 5, ""), "a\nverylongword\nb\n");
    }
}
