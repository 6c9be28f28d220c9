//! Task names (kebab-case) and task paths that cannot leave the project.

/// Whether `s` is a kebab-case name: lower-case letters and digits in groups joined by `-`.
pub fn is_kebab(s: &str) -> bool {
    !s.is_empty()
        && s.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// A kebab-case name from a description: "Add user auth!" -> `add-user-auth`. Letters and
/// digits of other scripts are transliterated first ("Ünïcödé" -> `unicode`, "Москва" ->
/// `moskva`); symbols and emoji separate words as punctuation does. Long descriptions are cut
/// at a word boundary near 60 characters. May be empty.
pub fn kebab(description: &str) -> String {
    let mut ascii = String::with_capacity(description.len());
    for c in description.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else if c.is_alphanumeric() {
            ascii.push_str(deunicode::deunicode_char(c).unwrap_or(" "));
        } else {
            ascii.push(' ');
        }
    }
    let mut out = String::new();
    for word in ascii
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() && out.len() + 1 + word.len() > 60 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word.to_ascii_lowercase());
    }
    if out.len() > 60 {
        out.truncate(60);
        out = out.trim_end_matches('-').to_string();
    }
    out
}

/// The task roots, relative to the project.
pub const ROOTS: [&str; 2] = ["tasks", ".automaton/tasks"];

/// Turn what a user typed into a task path relative to the project, checked:
/// `auth` -> `tasks/auth`; `auth/subtasks/login` -> `tasks/auth/subtasks/login`;
/// `tasks/auth` and `.automaton/tasks/auth` stay. Refuses absolute paths, `..`, empty parts
/// and names that are not kebab-case.
pub fn task_path(input: &str) -> Result<String, String> {
    let input = input.trim().trim_end_matches('/');
    if input.is_empty() {
        return Err("the task path is empty".into());
    }
    if input.starts_with('/') || input.contains('\\') {
        return Err(format!(
            "`{input}` must be a path inside the project (relative, `/`-separated)"
        ));
    }
    let (root, rest) = if let Some(r) = input.strip_prefix(".automaton/tasks/") {
        (".automaton/tasks", r)
    } else if let Some(r) = input.strip_prefix("tasks/") {
        ("tasks", r)
    } else {
        ("tasks", input)
    };
    let parts: Vec<&str> = rest.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if *part == ".." || *part == "." || part.is_empty() {
            return Err(format!(
                "`{input}` must not contain `..`, `.` or empty parts"
            ));
        }
        if i % 2 == 1 {
            if *part != "subtasks" {
                return Err(format!(
                    "`{input}`: sub-tasks live under `<task>/subtasks/<name>`, found `{part}`"
                ));
            }
        } else if !is_kebab(part) {
            let suggestion = kebab(part);
            return Err(if suggestion.is_empty() {
                format!("`{part}` is not a kebab-case task name")
            } else {
                format!("`{part}` is not a kebab-case task name (try `{suggestion}`)")
            });
        }
    }
    if parts.len().is_multiple_of(2) {
        return Err(format!("`{input}` ends in `subtasks`; name the sub-task"));
    }
    Ok(format!("{root}/{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_names() {
        assert_eq!(kebab("add user auth"), "add-user-auth");
        assert_eq!(kebab("  Add User-Auth!! (v2) "), "add-user-auth-v2");
        assert_eq!(kebab("!!!"), "");
        assert_eq!(kebab("Ünïcödé — fix the ❤ bug!"), "unicode-fix-the-bug");
        assert_eq!(kebab("Straße in Москва"), "strasse-in-moskva");
        assert_eq!(kebab("🦄🦄"), "");
        assert!(kebab(&"word ".repeat(40)).len() <= 60);
        assert!(
            is_kebab("a-1")
                && !is_kebab("A")
                && !is_kebab("a--b")
                && !is_kebab("-a")
                && !is_kebab("")
        );
    }

    #[test]
    fn task_paths() {
        assert_eq!(task_path("auth").unwrap(), "tasks/auth");
        assert_eq!(task_path("tasks/auth/").unwrap(), "tasks/auth");
        assert_eq!(
            task_path("auth/subtasks/login").unwrap(),
            "tasks/auth/subtasks/login"
        );
        assert_eq!(
            task_path(".automaton/tasks/auth").unwrap(),
            ".automaton/tasks/auth"
        );
        for bad in [
            "",
            "/etc",
            "../x",
            "tasks/../x",
            "a/b",
            "a/subtasks",
            "Auth",
            "a//b",
            "tasks/a\\b",
        ] {
            assert!(task_path(bad).is_err(), "{bad}");
        }
        assert!(
            task_path("Add Auth")
                .unwrap_err()
                .contains("try `add-auth`")
        );
    }
}
