//! The seed's settings syntax: `## Section` headings and `- **Key**: value` bullets.
//! Prose, code blocks and other lines between them are ignored.

/// One `- **Key**: value` bullet, with where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bullet {
    /// The heading the bullet stands under ("" before the first heading).
    pub section: String,
    pub key: String,
    pub value: String,
    /// 1-based line number.
    pub line: usize,
}

/// Parse every settings bullet of a Markdown document.
pub fn parse_bullets(text: &str) -> Vec<Bullet> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut in_fence = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            section = h.trim_start_matches('#').trim().to_string();
            continue;
        }
        if let Some((key, value)) = bullet(line) {
            out.push(Bullet {
                section: section.clone(),
                key,
                value,
                line: i + 1,
            });
        }
    }
    out
}

/// `- **Key**: value` (also `* **Key**: value` and `- **Key:** value`) to (key, value).
fn bullet(line: &str) -> Option<(String, String)> {
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))?
        .trim_start();
    let rest = rest.strip_prefix("**")?;
    let end = rest.find("**")?;
    let mut key = rest[..end].trim();
    let mut after = rest[end + 2..].trim_start();
    if let Some(k) = key.strip_suffix(':') {
        key = k.trim();
    } else {
        after = after.strip_prefix(':')?.trim_start();
    }
    Some((key.to_string(), clean_value(after)))
}

/// Strip a trailing ` # comment` (the seed writes `auto  # Use auto-detection`) and one pair of
/// surrounding backticks, so `` `claude -p` `` reads as `claude -p`.
fn clean_value(v: &str) -> String {
    let mut v = v.trim();
    if !v.starts_with('`') {
        if let Some(i) = v.find(" # ") {
            v = v[..i].trim_end();
        } else if let Some(i) = v.find("\t# ") {
            v = v[..i].trim_end();
        }
    }
    if v.len() >= 2 && v.starts_with('`') && v.ends_with('`') {
        v = &v[1..v.len() - 1];
    }
    v.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sections_bullets_and_lines() {
        let doc = "# Title\nprose\n## VRAM Configuration\n- **Auto-detect**: No\n- **Headroom**: 25%\n\n## Model Configuration\n- **Model**: auto  # Use auto-detection\n```\n- **Fake**: x\n```\n* **Agent command:** `claude -p`\n";
        let b = parse_bullets(doc);
        assert_eq!(b.len(), 4);
        assert_eq!(b[0].section, "VRAM Configuration");
        assert_eq!(
            (b[0].key.as_str(), b[0].value.as_str(), b[0].line),
            ("Auto-detect", "No", 4)
        );
        assert_eq!(b[2].value, "auto");
        assert_eq!(b[2].section, "Model Configuration");
        assert_eq!(
            (b[3].key.as_str(), b[3].value.as_str()),
            ("Agent command", "claude -p")
        );
    }

    #[test]
    fn ignores_lines_that_are_not_bullets() {
        assert!(parse_bullets("- plain item\n- **bold** no colon\n**Key**: v\n").is_empty());
    }
}
