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

/// Words that are commands, never the name of a top-level task: `automaton orchestrate
/// continue` reads like `automaton continue`, so it must not quietly create `tasks/continue`.
pub const RESERVED: [&str; 1] = ["continue"];

/// Whether `name` (a kebab-case name) is reserved for a command (see [`RESERVED`]).
pub fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
}

/// Why a request (the description `orchestrate` is given) cannot start a task, or `None`: it
/// must hold more than whitespace, and must not name a command word ([`RESERVED`]). Such a
/// request is a usage error, refused before anything is read or written.
pub fn request_refusal(description: &str) -> Option<String> {
    if description.trim().is_empty() {
        return Some(
            "the task description is empty: describe the task (`automaton orchestrate \"add user \
             auth\"`), or run `automaton continue` (or `automaton orchestrate` with no \
             description) to continue the most advanced unfinished task"
                .into(),
        );
    }
    let slug = kebab(description);
    if is_reserved(&slug) {
        return Some(format!(
            "`{}` is a command, not a task: run `automaton {slug}` (or `automaton orchestrate` \
             with no description) to continue the most advanced unfinished task, or describe a \
             new task in more words",
            description.trim()
        ));
    }
    None
}

/// The task roots, relative to the project.
pub const ROOTS: [&str; 2] = ["tasks", ".automaton/tasks"];

/// Turn what a user typed into a task path relative to the project, checked:
/// `auth` -> `tasks/auth`; `auth/subtasks/login` -> `tasks/auth/subtasks/login`;
/// `tasks/auth` and `.automaton/tasks/auth` stay, and so does `./tasks/auth` (a shell's
/// completion writes it). Refuses absolute paths, `..`, empty parts and names that are not
/// kebab-case.
pub fn task_path(input: &str) -> Result<String, String> {
    let mut input = input.trim().trim_end_matches('/');
    while let Some(rest) = input.strip_prefix("./") {
        input = rest.trim_start_matches('/');
    }
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
    fn empty_blank_and_reserved_requests_are_refused() {
        for blank in ["", "   ", "\t\n"] {
            let why = request_refusal(blank).unwrap();
            assert!(why.starts_with("the task description is empty"), "{why}");
        }
        for word in ["continue", " Continue ", "CONTINUE!"] {
            let why = request_refusal(word).unwrap();
            assert!(why.contains("is a command, not a task"), "{why}");
        }
        assert_eq!(request_refusal("continue the import"), None);
        assert_eq!(request_refusal("add user auth"), None);
        assert!(is_reserved("continue") && !is_reserved("continued"));
    }

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
        assert_eq!(task_path("./tasks/auth").unwrap(), "tasks/auth");
        assert_eq!(task_path("././auth").unwrap(), "tasks/auth");
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
