//! Warnings for settings automaton would silently ignore: a misspelled section (`## Phasez`),
//! a setting in the wrong file or under no section, and `Key: value` lines that lack the
//! `- **Key**: value` form. Each names its line and, where one is near, the nearest known
//! section or key ("did you mean").

use super::markdown::parse_bullets;
use super::{KEYS, KeySpec, SettingsFile};

/// The nearest of `candidates` to `word` (case-insensitive), if it is close enough to be a
/// slip of the keyboard: at most one edit for short words, two from 8 characters, three from
/// 16 (an edit: a letter added, dropped, changed, or two neighbours swapped, `desing`).
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let w = word.trim().to_ascii_lowercase();
    let limit = match w.chars().count() {
        0..=2 => return None,
        3..=7 => 1,
        8..=15 => 2,
        _ => 3,
    };
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(&w, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn sections() -> impl Iterator<Item = &'static str> {
    let mut seen: Vec<&'static str> = Vec::new();
    for k in KEYS {
        if !seen.contains(&k.section) {
            seen.push(k.section);
        }
    }
    seen.into_iter()
}

fn is_section(name: &str) -> bool {
    sections().any(|s| s.eq_ignore_ascii_case(name))
}

fn specs_named(key: &str) -> impl Iterator<Item = &'static KeySpec> + '_ {
    KEYS.iter().filter(move |k| k.key.eq_ignore_ascii_case(key))
}

/// Where a known key belongs, for a message: "config.md, under `## Limits`".
fn home_of(spec: &KeySpec) -> String {
    match spec.file {
        SettingsFile::AgentMd => ".agent.md (or config.md's `## Agent`)".to_string(),
        SettingsFile::ConfigMd => format!("config.md, under `## {}`", spec.section),
        SettingsFile::Env => format!("the environment variable {}", spec.key),
    }
}

/// The hint to add to "unknown key `key` in section `section`" of `file`: where the key
/// belongs if it is a known key elsewhere, else the nearest key of that section.
pub fn key_hint(key: &str, section: &str, file: SettingsFile) -> String {
    if let Some(spec) = specs_named(key).next() {
        return format!("; `{}` belongs in {}", spec.key, home_of(spec));
    }
    let here = KEYS
        .iter()
        .filter(|k| k.file == file && k.section.eq_ignore_ascii_case(section))
        .map(|k| k.key);
    match nearest(key, here) {
        Some(k) => format!("; did you mean `{k}`?"),
        None => String::new(),
    }
}

/// A heading of a settings file: its line, level (`##` is 2) and name.
type Heading = (usize, usize, String);

/// The warnings for config.md's headings automaton does not know: a did-you-mean, or where
/// the known settings under one belong.
fn unknown_sections(
    headings: &[Heading],
    bullets: &[super::markdown::Bullet],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (idx, (line, level, name)) in headings.iter().enumerate() {
        if is_section(name) {
            continue;
        }
        let end = headings.get(idx + 1).map_or(usize::MAX, |h| h.0);
        let inside: Vec<_> = bullets
            .iter()
            .filter(|b| b.line > *line && b.line < end)
            .collect();
        // A setting automaton knows, put under the wrong heading: say where it belongs
        // (a gate meant but misplaced would otherwise be silently absent).
        let belong: Vec<String> = inside
            .iter()
            .filter_map(|b| specs_named(&b.key).next())
            .map(|spec| format!("`{}` belongs in {}", spec.key, home_of(spec)))
            .collect();
        let near = nearest(name, sections());
        let what = format!("unknown section `{} {name}`", "#".repeat(*level));
        match near {
            Some(s) => out.push((
                *line,
                format!("{what}; did you mean `## {s}`? (its settings are ignored)"),
            )),
            None if !belong.is_empty() => out.push((
                *line,
                format!("{what}: its settings are ignored; {}", belong.join("; ")),
            )),
            None if !inside.is_empty() => out.push((
                *line,
                format!(
                    "{what}: its settings are ignored (sections: {})",
                    sections().collect::<Vec<_>>().join(", ")
                ),
            )),
            None => {}
        }
    }
    out
}

/// The warnings for one settings file: `(line, message)`.
pub fn diagnose(text: &str, file: SettingsFile) -> Vec<(usize, String)> {
    let bullets = parse_bullets(text);
    let (headings, mut out) = scan_lines(text, &bullets);
    // Sections: in config.md, one automaton does not know hides its settings.
    if file == SettingsFile::ConfigMd {
        out.extend(unknown_sections(&headings, &bullets));
    }
    out.extend(
        bullets
            .iter()
            .filter_map(|b| skipped_bullet(b, file).map(|msg| (b.line, msg))),
    );
    out.sort_by_key(|(line, _)| *line);
    out
}

/// The headings `(line, level, name)` of a settings file, and a warning for each plain
/// `Key: value` line that names a known setting: both outside code fences and HTML comments.
fn scan_lines(
    text: &str,
    bullets: &[super::markdown::Bullet],
) -> (Vec<Heading>, Vec<(usize, String)>) {
    let mut headings = Vec::new();
    let mut out = Vec::new();
    let (mut in_fence, mut in_comment) = (false, false);
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let n = i + 1;
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if in_comment {
            in_comment = !line.contains("-->");
            continue;
        }
        if line.starts_with("<!--") {
            in_comment = !line.contains("-->");
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let level = 1 + h.len() - h.trim_start_matches('#').len();
            headings.push((n, level, h.trim_start_matches('#').trim().to_string()));
            continue;
        }
        if bullets.iter().any(|b| b.line == n) {
            continue;
        }
        if let Some((key, value)) = plain_setting(line) {
            let known = KEYS
                .iter()
                .find(|k| k.key.eq_ignore_ascii_case(key))
                .map(|k| k.key)
                .or_else(|| nearest(key, KEYS.iter().map(|k| k.key)));
            if let Some(k) = known {
                out.push((
                    n,
                    format!("`{line}` is not read: settings are bullets like `- **{k}**: {value}`"),
                ));
            }
        }
    }
    (headings, out)
}

/// The warning for a bullet the loader skips without a word, if `b` is one.
fn skipped_bullet(b: &super::markdown::Bullet, file: SettingsFile) -> Option<String> {
    let known_here = |k: &&KeySpec| match file {
        SettingsFile::AgentMd => k.file == SettingsFile::AgentMd,
        SettingsFile::ConfigMd => {
            k.file == SettingsFile::AgentMd && b.section.eq_ignore_ascii_case("Agent")
        }
        SettingsFile::Env => false,
    };
    // The loader itself warns about unknown keys under `## Agent` of .agent.md.
    let agent_section = KEYS
        .iter()
        .any(|k| k.file == SettingsFile::AgentMd && k.section.eq_ignore_ascii_case(&b.section));
    if specs_named(&b.key).any(|k| known_here(&k))
        || (file == SettingsFile::AgentMd && agent_section)
    {
        return None;
    }
    match file {
        SettingsFile::AgentMd => match specs_named(&b.key).next() {
            Some(spec) => Some(format!(
                "`{}` is a config.md setting: it is ignored in .agent.md (put it in {})",
                spec.key,
                home_of(spec)
            )),
            None => nearest(
                &b.key,
                KEYS.iter()
                    .filter(|k| k.file == SettingsFile::AgentMd)
                    .map(|k| k.key),
            )
            .map(|k| format!("unknown key `{}` (ignored); did you mean `{k}`?", b.key)),
        },
        // Known sections get the loader's own "unknown key" warning; unknown ones the
        // section warning.
        SettingsFile::ConfigMd if b.section.is_empty() => specs_named(&b.key).next().map(|spec| {
            format!(
                "`{}` stands under no section, so it is ignored; it belongs in {}",
                spec.key,
                home_of(spec)
            )
        }),
        SettingsFile::ConfigMd if b.section.eq_ignore_ascii_case("Agent") => Some(format!(
            "unknown key `{}` in section `Agent` (ignored){}",
            b.key,
            key_hint(&b.key, "Agent", SettingsFile::AgentMd)
        )),
        SettingsFile::ConfigMd | SettingsFile::Env => None,
    }
}

/// `Key: value`, `- Key: value` or `**Key**: value`: a line that looks like a setting
/// without the bullet-and-bold form. The key is at most four words.
fn plain_setting(line: &str) -> Option<(&str, &str)> {
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .unwrap_or(line)
        .trim_start();
    let (key, value) = rest.split_once(':')?;
    let key = key.trim().trim_matches('*').trim();
    let value = value.trim().trim_start_matches('*').trim();
    let words = key.split_whitespace().count();
    let plain = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-');
    (plain && (1..=4).contains(&words) && !value.is_empty()).then_some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_finds_slips_and_ignores_strangers() {
        let s = ["Phases", "Limits", "VRAM Configuration"];
        assert_eq!(nearest("Phasez", s), Some("Phases"));
        assert_eq!(nearest("limit", s), Some("Limits"));
        assert_eq!(nearest("Notes", s), None);
        assert_eq!(nearest("VRAM Configration", s), Some("VRAM Configuration"));
    }

    #[test]
    fn config_md_sections_keys_and_plain_lines() {
        let text = "# My config\n\nSome notes: about this.\n\n## Phasez\n- **Design**: No\n\n## Notes\nprose\n\n## Extra\n- **Jobs**: 3\n\n## Limits\nMax iterations: 5\n- Stall timeout: 1m\n";
        let w = diagnose(text, SettingsFile::ConfigMd);
        let lines: Vec<usize> = w.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, vec![5, 11, 15, 16], "{w:?}");
        assert!(w[0].1.contains("did you mean `## Phases`"), "{w:?}");
        assert!(
            w[1].1.contains(
                "unknown section `## Extra`: its settings are ignored; `Jobs` belongs in \
                 config.md, under `## Limits`"
            ),
            "{w:?}"
        );
        assert!(w[2].1.contains("`- **Max iterations**: 5`"), "{w:?}");
        assert!(w[3].1.contains("`- **Stall timeout**: 1m`"), "{w:?}");
    }

    #[test]
    fn a_known_setting_under_an_unknown_heading_is_told_where_it_belongs() {
        let text = "## Gates\n- **Approve before**: design\n- **Colour**: blue\n";
        let w = diagnose(text, SettingsFile::ConfigMd);
        assert_eq!(w[0].0, 1, "{w:?}");
        assert_eq!(
            w[0].1,
            "unknown section `## Gates`: its settings are ignored; `Approve before` belongs in \
             .agent.md (or config.md's `## Agent`)"
        );
    }

    #[test]
    fn agent_md_wrong_file_and_did_you_mean() {
        let text = "# Agents\n- **Agent comand**: x\n- **Max iterations**: 3\n- **Role**: reviewer\n<!-- - **Jobs**: 2 -->\n";
        let w = diagnose(text, SettingsFile::AgentMd);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].1.contains("did you mean `Agent command`"), "{w:?}");
        assert!(w[1].1.contains("config.md, under `## Limits`"), "{w:?}");
    }
}
