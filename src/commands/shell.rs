//! `automaton completions SHELL` and `automaton man`: generated from the clap definitions, so
//! they never drift from `--help`.

use super::out;
use crate::cli::{Cli, CompletionsArgs, ManArgs};
use clap::CommandFactory;

pub fn completions_command(args: &CompletionsArgs) -> super::Result<u8> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "automaton", &mut buf);
    out::print(String::from_utf8_lossy(&buf))?;
    Ok(crate::exit::OK)
}

/// `automaton man [COMMAND…]` prints one page; `--dir DIR` writes every page there. Each page
/// has the command's options (clap), then the exit codes and the settings, from the same
/// tables as `automaton help exit-codes` and `automaton help settings`.
pub fn man_command(args: &ManArgs) -> super::Result<u8> {
    let mut root = Cli::command();
    root.build();
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).map_err(|e| at(dir, e))?;
        let mut written = Vec::new();
        write_pages(&root, dir, &mut written)?;
        out::print(format!(
            "wrote {} man pages to {}\n",
            written.len(),
            dir.display()
        ))?;
        return Ok(crate::exit::OK);
    }
    let mut cmd = &root;
    for word in &args.command {
        cmd = cmd.find_subcommand(word).ok_or_else(|| {
            super::Error::Usage(format!(
                "no command `{}` (see `automaton --help`)",
                args.command.join(" ")
            ))
        })?;
    }
    out::print(render_page(cmd)?)?;
    Ok(crate::exit::OK)
}

fn write_pages(
    cmd: &clap::Command,
    dir: &std::path::Path,
    written: &mut Vec<std::path::PathBuf>,
) -> super::Result<()> {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name());
    let path = dir.join(format!("{name}.1"));
    let page = render_page(cmd)?;
    std::fs::write(&path, page).map_err(|e| at(&path, e))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}

/// One page: clap's sections, then EXIT STATUS, SETTINGS and SEE ALSO.
pub fn render_page(cmd: &clap::Command) -> super::Result<String> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut buf)?;
    let mut page = String::from_utf8_lossy(&buf).into_owned();
    page.push_str(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in crate::exit::TABLE {
        page.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", roff_text(meaning)));
    }
    page.push_str(".SH SETTINGS\n");
    page.push_str(&roff_text(
        "`- **Key**: value` bullets under `## Section` headings of .agent.md and config.md, \
         in the project's .automaton/, then $AUTOMATON_HOME (default ~/.automaton/), then the \
         built-in defaults; the environment and flags beat every file. \
         `automaton config` prints each effective value and its origin.",
    ));
    page.push('\n');
    for spec in crate::settings::KEYS {
        let place = match spec.file {
            crate::settings::SettingsFile::Env => "environment".to_string(),
            file => format!("{}, ## {}", file.name(), spec.section),
        };
        let default = if spec.default.is_empty() {
            "none"
        } else {
            spec.default
        };
        let mut text = format!("{} [default: {default}]", spec.help);
        if let Some(var) = spec.env
            && spec.file != crate::settings::SettingsFile::Env
        {
            text.push_str(&format!(" (also {var})"));
        }
        page.push_str(&format!(
            ".TP\n\\fB{}\\fR ({})\n{}\n",
            roff_text(spec.key),
            roff_text(&place),
            roff_text(&text)
        ));
    }
    page.push_str(".SH \"SEE ALSO\"\n");
    page.push_str(&roff_text(
        "automaton help exit-codes, automaton help settings, automaton help events, \
         automaton help files, automaton man --dir DIR (every page)",
    ));
    page.push('\n');
    Ok(page)
}

/// Text safe in a roff paragraph: backslashes doubled, and no line starting with a control
/// character (`.` or `'`).
fn roff_text(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with('.') || text.starts_with('\'') {
        format!("\\&{text}")
    } else {
        text
    }
}

/// An I/O error that names its path.
fn at(path: &std::path::Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}
