//! The layer check: every `crate::<module>` path in `src/` names a module of the same layer
//! or a lower one (the picture in `lib.rs`). Comments are skipped; test code is checked too.

use std::path::Path;

/// Layer of each top-level module; keep in step with the picture in `lib.rs`.
const LAYERS: &[(&str, u8)] = &[
    ("exit", 0),
    ("fsx", 0),
    ("state", 0),
    ("plan", 0),
    ("names", 0),
    ("agent_kind", 0),
    ("units", 0),
    ("store", 1),
    ("process", 1),
    ("git", 1),
    ("settings", 2),
    ("artifact", 3),
    ("task", 4),
    ("detect", 5),
    ("report", 6),
    ("run", 7),
    ("watch", 7),
    ("commands", 8),
    ("Ctx", 8),
    ("cli", 8),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// `(file, line number, used module)` for every `crate::x` in the non-comment code of a file.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((i + 1, name));
            }
            rest = after;
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn imports_only_go_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let first = rel.components().next().expect("component");
        let module = first.as_os_str().to_string_lossy();
        let module = module.trim_end_matches(".rs");
        if matches!(module, "lib" | "main" | "layers") {
            continue;
        }
        let own = layer(module).unwrap_or_else(|| {
            panic!(
                "src/{}: module `{module}` has no layer in src/layers.rs",
                rel.display()
            )
        });
        let text = std::fs::read_to_string(file).expect("read");
        for (line, used) in crate_paths(&text) {
            let Some(theirs) = layer(&used) else {
                continue; // a crate-level item such as a macro
            };
            if theirs > own {
                upward.push(format!(
                    "src/{}:{line}: `{module}` (layer {own}) uses `{used}` (layer {theirs})",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports going up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_scanner_sees_paths_and_skips_comments() {
    let text = "use crate::run::x;\n// crate::cli\nlet a = crate::report::f(crate::cli::A);\n";
    let got: Vec<String> = crate_paths(text).into_iter().map(|(_, m)| m).collect();
    assert_eq!(got, ["run", "report", "cli"]);
}
