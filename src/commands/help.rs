//! `automaton help [TOPIC | COMMAND]`: the pages an installed binary carries about itself,
//! each made from the code's own table: `exit-codes` (`exit::TABLE`), `settings` (the settings
//! registry), `events` (docs/events.md, built in; a test keeps it equal to the event types)
//! and `files` (`store::files::FILES`). A command name prints that command's `--help`.

use super::{Error, out};
use crate::cli::{Cli, HelpArgs};
use crate::settings::{KEYS, Kind, SettingsFile};
use crate::store::files::{FILES, Git};
use clap::CommandFactory;

/// The topics, with one line each (the list `automaton help` ends with).
pub const TOPICS: [(&str, &str); 4] = [
    ("exit-codes", "every exit code and what it means"),
    (
        "settings",
        "every setting: file, section, key, default, variable, meaning",
    ),
    ("events", "the JSON event stream of `orchestrate --json`"),
    (
        "files",
        "every file automaton reads or writes, and whether it belongs in git",
    ),
];

/// The `orchestrate --json` event stream's page, as the repository's docs/events.md has it.
const EVENTS_MD: &str = include_str!("../../docs/events.md");

pub fn help_command(args: &HelpArgs) -> super::Result<u8> {
    let words: Vec<&str> = args.topic.iter().map(String::as_str).collect();
    let text = match words.as_slice() {
        [] => {
            let mut cmd = Cli::command();
            let mut text = cmd.render_long_help().to_string();
            text.push_str("\nHelp topics (`automaton help <topic>`):\n");
            for (topic, line) in TOPICS {
                text.push_str(&format!("  {topic:<12}{line}\n"));
            }
            text
        }
        ["exit-codes"] => exit_codes_page(),
        ["settings"] => settings_page(),
        ["events"] => events_page(),
        ["files"] => files_page(),
        path => command_help(path)?,
    };
    out::print(text)?;
    Ok(crate::exit::OK)
}

/// A command's `--help` (`automaton help task create`).
fn command_help(path: &[&str]) -> super::Result<String> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut sub = &mut cmd;
    for word in path {
        sub = match sub.find_subcommand_mut(word) {
            Some(s) => s,
            None => {
                let topics: Vec<&str> = TOPICS.iter().map(|(t, _)| *t).collect();
                return Err(Error::Usage(format!(
                    "no help topic or command `{}`; topics: {}; commands: see `automaton help`",
                    path.join(" "),
                    topics.join(", ")
                )));
            }
        };
    }
    Ok(sub.render_long_help().to_string())
}

/// `prefix` then `text` wrapped to `width` columns, every further line indented to where the
/// text began.
pub fn hang(prefix: &str, text: &str, width: usize) -> String {
    let indent = prefix.chars().count();
    let mut out = prefix.to_string();
    let mut col = indent;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if col > indent && col + 1 + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if col > indent {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += len;
    }
    out
}

pub fn exit_codes_page() -> String {
    let mut text =
        String::from("Exit codes of automaton (scripts and CI steps may branch on them):\n\n");
    for (code, meaning) in crate::exit::TABLE {
        text.push_str(&hang(&format!("  {code:<5}"), meaning, 92));
        text.push('\n');
    }
    text
}

/// How a setting's value is written (its choices, or the kind of value).
pub fn value_form(kind: Kind) -> String {
    match kind {
        Kind::Bool => "Yes / No (also true / false, Enabled / Disabled)".into(),
        Kind::Count => "a positive number".into(),
        Kind::Whole => "a whole number, 0 allowed".into(),
        Kind::Duration => "a duration: 90s, 45m, 1h".into(),
        Kind::Pause => "a duration, 0 for none".into(),
        Kind::Seconds => "seconds (fractions allowed) or a duration such as 500ms".into(),
        Kind::Ratio => "a share: 25% or 0.25".into(),
        Kind::Tokens => "tokens (32k, 1M) or auto".into(),
        Kind::Text => "text".into(),
        Kind::Choice(words) => words.join(" / "),
        Kind::Phases => "phase words separated by commas".into(),
        Kind::Hosts => "host[:port] entries separated by commas".into(),
        Kind::Budget => "`2M tokens`, `$5`, `2M tokens, $5` or none".into(),
    }
}

pub fn settings_page() -> String {
    let mut text = String::from(
        "Settings are `- **Key**: value` bullets under `## Section` headings of two files,\n\
         each looked up in the project's .automaton/, then $AUTOMATON_HOME (default\n\
         ~/.automaton/), then the defaults built in; key by key, the project's beat the\n\
         home's. The environment and flags beat every file. `automaton config` prints each\n\
         effective value and where it came from.\n",
    );
    let mut heading = (None, "");
    for spec in KEYS {
        if heading != (Some(spec.file), spec.section) {
            heading = (Some(spec.file), spec.section);
            text.push('\n');
            match spec.file {
                SettingsFile::Env => text.push_str("Environment variables only (no file)\n"),
                file => text.push_str(&format!("{}  ## {}\n", file.name(), spec.section)),
            }
        }
        let default = if spec.default.is_empty() {
            "none"
        } else {
            spec.default
        };
        text.push_str(&format!("  {}  [default: {default}]\n", spec.key));
        text.push_str(&hang("      ", spec.help, 92));
        text.push('\n');
        text.push_str(&hang("      value: ", &value_form(spec.kind), 92));
        text.push('\n');
        if let Some(var) = spec.env
            && spec.file != SettingsFile::Env
        {
            text.push_str(&format!("      also the environment variable {var}\n"));
        }
    }
    text
}

pub fn events_page() -> String {
    EVENTS_MD.to_string()
}

pub fn files_page() -> String {
    let mut text = String::from(
        "Files automaton reads or writes. Task folders are tasks/<name>/ and\n\
         .automaton/tasks/<name>/, sub-tasks <task>/subtasks/<name>/. `automaton init` writes\n\
         .gitignore rules for the files marked \"ignored\"; commit the ones marked \"in git\".\n",
    );
    let mut place = "";
    for f in FILES {
        if f.place.heading() != place {
            place = f.place.heading();
            text.push_str(&format!("\n{place}\n"));
        }
        let git = match f.git {
            Git::Commit => "in git",
            Git::Ignore => "ignored",
        };
        text.push_str(&format!("  {}  ({git}; {})\n", f.path, f.by));
        text.push_str(&hang("      ", f.meaning, 92));
        text.push('\n');
    }
    text
}
