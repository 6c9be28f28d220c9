//! `automaton attach <task>`: attach to (or, inside the same tmux server, switch to) the tmux
//! window where the task's phase runs (`- **Executor**: tmux`).

use super::{Ctx, Error, out};
use crate::cli::AttachArgs;
use crate::exit;
use crate::run::executor::tmux::Tmux;
use std::os::unix::process::CommandExt;

pub fn attach_command(ctx: &Ctx, args: &AttachArgs) -> super::Result<u8> {
    let rel = ctx.task_path(&args.task)?;
    // The socket may be set: read the settings as `status` does (one that cannot be read
    // keeps its default).
    let settings = crate::settings::Settings::load_lenient(&ctx.project)?;
    let socket = settings.text(crate::settings::Key::TmuxSocket);
    let tmux = Tmux::for_project(&ctx.project, socket).map_err(|e| Error::Input(e.to_string()))?;
    let Some((window, name)) = tmux.window_of(&rel) else {
        return Err(Error::Input(format!(
            "{rel} has no running tmux window: nothing runs for it now (tmux session {} on \
             socket {}). A phase gets a window while it runs with `- **Executor**: tmux` \
             (or `orchestrate --executor tmux`); `automaton status` shows where each task stands",
            tmux.session, tmux.socket
        )));
    };
    let mut select = tmux.command();
    select.args(["select-window", "-t", &window]);
    let same_server = std::env::var("TMUX").ok().is_some_and(|t| {
        t.split(',')
            .next()
            .and_then(|p| std::path::Path::new(p).file_name().map(|f| f.to_owned()))
            .is_some_and(|f| f.to_string_lossy() == tmux.socket)
    });
    let mut go = tmux.command();
    if same_server {
        go.args(["switch-client", "-t", &window]);
    } else {
        go.args(["attach-session", "-t", &format!("={}", tmux.session)]);
        if args.read_only {
            go.arg("-r");
        }
    }
    if args.print {
        let shown: Vec<String> = std::iter::once("tmux".to_string())
            .chain(
                go.get_args()
                    .map(|a| crate::report::shell_quote(&a.to_string_lossy())),
            )
            .collect();
        out::println(format_args!("window {window} {name}\n{}", shown.join(" ")))?;
        return Ok(exit::OK);
    }
    let _ = select.output();
    // Hand the terminal to tmux; exec returns only on failure.
    let err = go.exec();
    Err(Error::Input(format!("cannot run tmux: {err}")))
}
