//! Bounded rework, pure: whether a task whose review or check failed goes back to implement
//! for another round, or stops for a person. No I/O: the run layer reads the rounds done so
//! far (`logs/rework/<n>/FINDINGS.md`) and the new failure, and asks.

/// What a failure that could be reworked leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rework {
    /// `- **Rework**: 0` (the default): the task stops for a person, as without rework.
    Off,
    /// Start round `n` (1-based): the artifacts from implement on are set aside and implement
    /// runs again with the findings.
    Round(u32),
    /// Every round allowed was spent.
    Spent { rounds: u32 },
    /// The failure is the same as the one that started the last round: another round would
    /// only repeat it.
    Repeated { round: u32 },
}

/// Decide on a new failure. `max`: the rounds allowed; `done`: the findings that started
/// each round so far, oldest first (their normalised text is compared); `new`: the new
/// failure's findings.
pub fn decide(max: u32, done: &[String], new: &str) -> Rework {
    if max == 0 {
        return Rework::Off;
    }
    let rounds = u32::try_from(done.len()).unwrap_or(u32::MAX);
    if let Some(last) = done.last()
        && normalise(last) == normalise(new)
    {
        return Rework::Repeated { round: rounds };
    }
    if rounds >= max {
        return Rework::Spent { rounds };
    }
    Rework::Round(rounds + 1)
}

/// A failure's text with what differs between two runs of the same failure taken out: paths
/// (a worktree or temporary folder has a new name each time), times and durations, long hex
/// numbers (commit ids, addresses), and spacing. What is left is what the failure says.
pub fn normalise(text: &str) -> String {
    text.split_whitespace()
        .map(normalise_word)
        .collect::<Vec<_>>()
        .join(" ")
}

fn normalise_word(word: &str) -> String {
    let core = word.trim_matches(|c: char| "()[]{}<>,;:'\"`".contains(c));
    if core.contains('/') && (core.starts_with('/') || core.starts_with("./")) {
        // Only the file's own name says which file failed.
        let name = core.rsplit('/').find(|s| !s.is_empty()).unwrap_or("");
        return format!("<path>/{name}");
    }
    if let Some(log) = attempt_log(core) {
        return log;
    }
    if is_time_like(core) {
        return "<time>".into();
    }
    if core.len() >= 8
        && core.chars().all(|c| c.is_ascii_hexdigit())
        && core.chars().any(|c| c.is_ascii_digit())
    {
        return "<hex>".into();
    }
    word.to_string()
}

/// A log of automaton's own, numbered by attempt (`tasks/a/logs/verify-2.log`), without its
/// number: each run of the same failing check writes the next one, so the number says
/// nothing of the failure. Only a `.log` in a folder named `logs` is one
/// (`src/catalogs/item-1.rs` is the project's own file, and its number counts).
fn attempt_log(word: &str) -> Option<String> {
    let (folder, name) = word.rsplit_once("logs/")?;
    let stem = name.strip_suffix(".log")?;
    let (what, n) = stem.rsplit_once('-')?;
    let whole_folder = folder.is_empty() || folder.ends_with('/');
    (whole_folder && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && !what.contains('/'))
        .then(|| format!("{folder}logs/{what}-<n>.log"))
}

/// `12:03:44`, `2026-12-03T12:03:44Z`, `1.25s`, `340ms`, `3m`: clock readings and durations.
fn is_time_like(word: &str) -> bool {
    let digits = word.chars().filter(char::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    if word.contains(':')
        && word
            .chars()
            .all(|c| c.is_ascii_digit() || ":.-TZ+".contains(c))
    {
        return true;
    }
    if word.len() >= 10
        && word.as_bytes()[4] == b'-'
        && word
            .chars()
            .all(|c| c.is_ascii_digit() || "-:.TZ+".contains(c))
    {
        return true;
    }
    let number_end = word
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(word.len());
    number_end > 0 && matches!(&word[number_end..], "s" | "ms" | "us" | "µs" | "m" | "h")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_then_rounds_then_spent() {
        assert_eq!(decide(0, &[], "x"), Rework::Off);
        assert_eq!(decide(2, &[], "a"), Rework::Round(1));
        assert_eq!(decide(2, &["a".into()], "b"), Rework::Round(2));
        assert_eq!(
            decide(2, &["a".into(), "b".into()], "c"),
            Rework::Spent { rounds: 2 }
        );
    }

    #[test]
    fn the_same_failure_twice_in_a_row_stops_early() {
        let first = "test_add failed in /tmp/wt-1a2b/src/lib.rs after 1.52s at 12:03:44";
        let again = "test_add  failed in /tmp/wt-9f9f/src/lib.rs after 0.97s at 12:09:01";
        assert_eq!(
            decide(3, &[first.into()], again),
            Rework::Repeated { round: 1 }
        );
        // Only the last round counts: a failure that came back after a different one is new.
        assert_eq!(
            decide(3, &[first.into(), "other".into()], again),
            Rework::Round(3)
        );
    }

    #[test]
    fn different_findings_are_not_the_same() {
        assert_ne!(normalise("exit status 1"), normalise("exit status 2"));
        assert_ne!(normalise("3 tests failed"), normalise("2 tests failed"));
        assert_eq!(
            normalise("commit 3f9a2c1d0e ok"),
            normalise("commit 77aa00bb11 ok")
        );
        // automaton's own attempt logs differ by their number only; other logs by name.
        assert_eq!(
            normalise("failed; see tasks/a/logs/verify-1.log; round 1"),
            normalise("failed; see tasks/a/logs/verify-2.log; round 1")
        );
        assert_ne!(
            normalise("see tasks/a/logs/verify-1.log"),
            normalise("see tasks/a/logs/integration-1.log")
        );
        assert_ne!(normalise("src/case-1.rs"), normalise("src/case-2.rs"));
        // A project's own file whose folder merely ends in `logs` is not one of them.
        assert_ne!(
            normalise("src/catalogs/item-1.rs"),
            normalise("src/catalogs/item-2.rs")
        );
        assert_ne!(normalise("blogs/post-1.log"), normalise("blogs/post-2.log"));
    }
}
