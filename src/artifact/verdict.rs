//! VERDICT.md: exactly one verdict word (PASS, FAIL, NEEDS_REVIEW) on the verdict line(s), and
//! the items that manual mode turns into fix, review and tie-break tasks.
//!
//! Accepted forms: `Verdict: PASS`, `**Verdict**: FAIL`, `# Referee verdict: NEEDS_REVIEW`,
//! any case, `NEEDS REVIEW` with a space. Without any `verdict:` line, a first non-blank line that
//! is only a verdict word counts. Two different words, or none, make the file malformed.

use crate::state::Verdict;

/// What VERDICT.md says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictDoc {
    /// The verdict, or why the file is malformed.
    pub verdict: Result<Verdict, String>,
    /// Bullets under `## Findings` (fix tasks on FAIL).
    pub findings: Vec<String>,
    /// Bullets under `## Remaining Issues` (review tasks on NEEDS_REVIEW).
    pub remaining: Vec<String>,
    /// Bullets under `## Tasks for Review / Tie-Breaks` (tie-break tasks).
    pub tiebreaks: Vec<String>,
}

pub fn parse_verdict(text: &str) -> VerdictDoc {
    let mut words: Vec<Verdict> = Vec::new();
    let mut section = Section::Other;
    let mut doc = VerdictDoc {
        verdict: Err(String::new()),
        findings: Vec::new(),
        remaining: Vec::new(),
        tiebreaks: Vec::new(),
    };
    for line in text.lines() {
        let trimmed = line.trim();
        let lower = trimmed.to_ascii_lowercase();
        if let Some(i) = verdict_colon(&lower) {
            for w in verdict_words(&trimmed[i + 1..]) {
                if !words.contains(&w) {
                    words.push(w);
                }
            }
            continue;
        }
        if trimmed.starts_with('#') {
            let title = lower.trim_start_matches('#').trim();
            section = if title.starts_with("findings") {
                Section::Findings
            } else if title.starts_with("remaining issues") {
                Section::Remaining
            } else if title.contains("tie-break") || title.contains("tiebreak") {
                Section::Tiebreaks
            } else {
                Section::Other
            };
            continue;
        }
        if let Some(item) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
            .map(str::trim)
            .filter(|i| !i.is_empty() && !is_none_item(i))
        {
            let list = match section {
                Section::Findings => &mut doc.findings,
                Section::Remaining => &mut doc.remaining,
                Section::Tiebreaks => &mut doc.tiebreaks,
                Section::Other => continue,
            };
            list.push(item.to_string());
        }
    }
    if words.is_empty()
        && let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty())
    {
        let bare = first.trim_matches(|c: char| c == '*' || c == '#' || c.is_whitespace());
        if let Some(v) = word(bare) {
            words.push(v);
        }
    }
    doc.verdict = match words.as_slice() {
        [v] => Ok(*v),
        [] => Err(
            "no verdict word (expected a line `Verdict: PASS`, `FAIL` or `NEEDS_REVIEW`)".into(),
        ),
        many => Err(format!(
            "more than one verdict word ({})",
            many.iter().map(|v| v.word()).collect::<Vec<_>>().join(", ")
        )),
    };
    doc
}

#[derive(Clone, Copy)]
enum Section {
    Findings,
    Remaining,
    Tiebreaks,
    Other,
}

/// Position of the colon of a `verdict:` line (`**Verdict**:`, `# Referee verdict:`).
/// Only a line that starts with the verdict label counts (after heading, list or emphasis
/// markup, and an optional `referee` / `final`): a note like "- Previous verdict: FAIL" does not.
fn verdict_colon(lower: &str) -> Option<usize> {
    let v = lower.find("verdict")?;
    let lead = lower[..v].trim_matches(|c: char| c.is_whitespace() || "#*_->".contains(c));
    if !matches!(
        lead,
        "" | "referee" | "final" | "the" | "referee's" | "final referee"
    ) {
        return None;
    }
    let after = &lower[v + "verdict".len()..];
    let colon = after.find(':')?;
    after[..colon]
        .chars()
        .all(|c| c == '*' || c == '_' || c.is_whitespace())
        .then_some(v + "verdict".len() + colon)
}

fn verdict_words(s: &str) -> Vec<Verdict> {
    let normal = s
        .to_ascii_uppercase()
        .replace("NEEDS REVIEW", "NEEDS_REVIEW");
    normal
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter_map(word)
        .collect()
}

fn word(w: &str) -> Option<Verdict> {
    match w
        .to_ascii_uppercase()
        .replace("NEEDS REVIEW", "NEEDS_REVIEW")
        .as_str()
    {
        "PASS" | "PASSED" => Some(Verdict::Pass),
        "FAIL" | "FAILED" => Some(Verdict::Fail),
        "NEEDS_REVIEW" => Some(Verdict::NeedsReview),
        _ => None,
    }
}

fn is_none_item(item: &str) -> bool {
    let l = item.to_ascii_lowercase();
    let l = l.trim_end_matches('.');
    l == "none" || l == "n/a" || l == "no findings" || l == "nothing"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Result<Verdict, String> {
        parse_verdict(text).verdict
    }

    #[test]
    fn verdict_forms() {
        assert_eq!(v("Verdict: PASS\n"), Ok(Verdict::Pass));
        assert_eq!(v("# Review\n\n**Verdict**: FAIL\n"), Ok(Verdict::Fail));
        assert_eq!(
            v("# Referee verdict: NEEDS_REVIEW\n"),
            Ok(Verdict::NeedsReview)
        );
        assert_eq!(v("verdict: pass\n"), Ok(Verdict::Pass));
        assert_eq!(v("- **Verdict:** needs review\n"), Ok(Verdict::NeedsReview));
        assert_eq!(v("PASS\n\nAll good.\n"), Ok(Verdict::Pass));
        // A verdict line decides even when the prose below mentions other words.
        assert_eq!(
            v("Verdict: PASS\n\nThe old test would FAIL without the fix.\n"),
            Ok(Verdict::Pass)
        );
        // Only a line that starts with the label is a verdict line.
        assert_eq!(
            v("Verdict: PASS\n\n## Notes\n- Previous verdict: FAIL (fixed since)\n"),
            Ok(Verdict::Pass)
        );
        assert_eq!(
            v("## Final verdict: NEEDS_REVIEW\n"),
            Ok(Verdict::NeedsReview)
        );
    }

    #[test]
    fn malformed_verdicts() {
        assert!(
            v("Looks fine to me.\n")
                .unwrap_err()
                .contains("no verdict word")
        );
        assert!(v("").unwrap_err().contains("no verdict word"));
        assert!(
            v("Verdict: PASS\nVerdict: FAIL\n")
                .unwrap_err()
                .contains("PASS, FAIL")
        );
        assert!(
            v("Verdict: PASS or FAIL\n")
                .unwrap_err()
                .contains("more than one")
        );
        // Same word twice is one verdict.
        assert_eq!(v("Verdict: FAIL\n**Verdict**: FAIL\n"), Ok(Verdict::Fail));
    }

    #[test]
    fn items_by_section() {
        let doc = parse_verdict(
            "Verdict: FAIL\n\n## Findings\n- login-race: two logins at once\n- None\n\n## Remaining Issues\n* docs: thin\n\n## Tasks for Review / Tie-Breaks\n- api-shape: two readings\n## Notes\n- not an item\n",
        );
        assert_eq!(doc.findings, vec!["login-race: two logins at once"]);
        assert_eq!(doc.remaining, vec!["docs: thin"]);
        assert_eq!(doc.tiebreaks, vec!["api-shape: two readings"]);
    }
}
