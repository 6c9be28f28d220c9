//! `automaton task create`.

use super::{Ctx, out};
use crate::cli::TaskCreateArgs;
use crate::names;
use crate::state::State;
use crate::task::{NewTask, create_task};

pub fn create_command(ctx: &Ctx, args: &TaskCreateArgs) -> super::Result<u8> {
    let rel = ctx.task_path(&args.path)?;
    if let Some(word) = names::ROOTS
        .iter()
        .filter_map(|root| rel.strip_prefix(&format!("{root}/")))
        .find(|name| names::is_reserved(name))
    {
        return Err(super::Error::Input(format!(
            "`{word}` is a command word (`automaton {word}`), not a task name: choose another name"
        )));
    }
    let start = State::parse(&args.at).ok_or_else(|| {
        super::Error::Input(format!(
            "unknown state `{}`; one of: {}",
            args.at,
            State::ALL.map(State::word).join(", ")
        ))
    })?;
    create_task(
        &ctx.project,
        &NewTask {
            rel: &rel,
            start,
            description: None,
            copy_from: None,
            rebuildable: false,
            files: &[],
        },
    )?;
    // A new task invalidates the VRAM detection cache.
    let _ = crate::detect::invalidate_cache(&ctx.project);
    if args.json {
        let doc = serde_json::json!({
            "created": rel,
            "state": start.word(),
            "dir": ctx.project.join(&rel).display().to_string(),
        });
        out::println(doc)?;
    } else {
        out::println(format_args!("created {rel} ({})", start.word()))?;
    }
    Ok(crate::exit::OK)
}
