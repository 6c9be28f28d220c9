//! `automaton config`: every effective setting and where it came from.

use super::{Ctx, out};
use crate::cli::ConfigArgs;
use crate::settings::Settings;

pub fn config_command(ctx: &Ctx, args: &ConfigArgs) -> super::Result<u8> {
    let settings = Settings::load(&ctx.project)?;
    for w in &settings.warnings {
        eprintln!("warning: {w}");
    }
    if args.json {
        let items: Vec<_> = settings
            .all()
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.spec.id,
                    "file": r.spec.file.name(),
                    "section": r.spec.section,
                    "key": r.spec.key,
                    "value": crate::settings::value::redact(&r.raw),
                    "origin": r.origin.to_string(),
                })
            })
            .collect();
        out::println(serde_json::to_string_pretty(
            &serde_json::json!({ "settings": items }),
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
    }
    Ok(crate::exit::OK)
}
