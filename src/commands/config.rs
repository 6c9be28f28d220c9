//! `automaton config`: every effective setting and where it came from.

use super::{Ctx, out};
use crate::cli::ConfigArgs;
use crate::run::adapter::{AgentKind, adapter_for};
use crate::run::sandbox::{Passes, Policy};
use crate::settings::{Key, Settings};

/// One warning line per setting that could not be read (see [`Settings::load_lenient`]).
pub fn invalid_warnings(settings: &Settings) -> Vec<String> {
    settings
        .invalid
        .iter()
        .map(|(_, e)| format!("{e} (orchestrate refuses to run until it is fixed)"))
        .collect()
}

pub fn config_command(ctx: &Ctx, args: &ConfigArgs) -> super::Result<u8> {
    // A bad value in a file is shown in the listing at its line, not fatal (orchestrate
    // refuses it); a bad environment variable is an error naming it (exit 1), as for
    // orchestrate.
    let settings = Settings::load_lenient(&ctx.project)?;
    settings.check_env()?;
    for w in settings.warnings.iter().chain(&invalid_warnings(&settings)) {
        eprintln!("warning: {w}");
    }
    let error_of = |id: &str| {
        settings
            .invalid
            .iter()
            .filter(|(i, _)| *i == id)
            .map(|(_, e)| e.clone())
            .next_back()
    };
    let sandbox = sandbox_passes(&settings);
    if args.json {
        let items: Vec<_> = settings
            .all()
            .iter()
            .map(|r| {
                let mut item = serde_json::json!({
                    "id": r.spec.id,
                    "file": r.spec.file.name(),
                    "section": r.spec.section,
                    "key": r.spec.key,
                    "value": crate::settings::value::redact(&r.raw),
                    "origin": r.origin.to_string(),
                });
                if let Some(e) = error_of(r.spec.id) {
                    item["error"] = e.into();
                }
                item
            })
            .collect();
        out::println(serde_json::to_string_pretty(
            &serde_json::json!({ "settings": items, "sandbox": sandbox }),
        )?)?;
        return Ok(crate::exit::OK);
    }
    let mut current = ("", "");
    for r in settings.all() {
        if current != (r.spec.file.name(), r.spec.section) {
            current = (r.spec.file.name(), r.spec.section);
            out::println(format_args!("{} ## {}", current.0, current.1))?;
        }
        let raw = crate::settings::value::redact(&r.raw);
        let shown = if raw.is_empty() {
            "(unset)"
        } else {
            raw.as_str()
        };
        out::println(format_args!(
            "  {:<30} {:<24} # {}",
            r.spec.key, shown, r.origin
        ))?;
        if let Some(e) = error_of(r.spec.id) {
            out::println(format_args!("  {:<30} ^ error: {e}", ""))?;
        }
    }
    if let Some(p) = sandbox {
        out::println(format_args!(
            "sandbox (bwrap) of the {} agent: what passes in\n  \
             {:<30} {}\n  {:<30} the working folder, the task folder, a private /tmp{}\n  \
             {:<30} the machine but the home, /tmp and /run{}\n  {:<30} {}{}",
            p.agent,
            "environment",
            p.env.join(", "),
            "writable",
            p.writable
                .iter()
                .map(|w| format!(", {w}"))
                .collect::<String>(),
            "readable",
            p.readable
                .iter()
                .map(|r| format!(", {r}"))
                .collect::<String>(),
            "network",
            p.network,
            match p.endpoints.is_empty() {
                true => String::new(),
                false => format!(": {}", p.endpoints.join(", ")),
            },
        ))?;
    }
    Ok(crate::exit::OK)
}

/// With `Sandbox: bwrap`, what passes into the agent's sandbox.
fn sandbox_passes(settings: &Settings) -> Option<Passes> {
    let policy = Policy::resolve(settings)?;
    let kind = settings
        .text(Key::AgentKind)
        .and_then(AgentKind::parse)
        .unwrap_or(AgentKind::Command);
    let env = |name: &str| std::env::var(name).ok();
    Some(policy.passes(adapter_for(kind), &env))
}
