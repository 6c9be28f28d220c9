//! `automaton watch`: the command line's choices handed to the read-only viewer.

use super::{Ctx, Error};
use crate::cli::WatchArgs;
use crate::settings::value::parse_positive_duration;
use crate::settings::{Key, Settings};
use crate::watch::{Options, WatchError};

pub fn watch_command(ctx: &Ctx, args: &WatchArgs) -> super::Result<u8> {
    let settings = Settings::load_lenient(&ctx.project)?;
    let poll = match settings.text(Key::WatchPoll) {
        None => None,
        Some(v) => Some(parse_positive_duration(v).map_err(|why| {
            Error::Input(format!(
                "environment variable AUTOMATON_WATCH_POLL: expected {why}"
            ))
        })?),
    };
    let opts = Options {
        once: args.once,
        size: args.size,
        color: ctx.colors(true),
        poll,
    };
    crate::watch::run(&ctx.project, &opts).map_err(|e| match e {
        WatchError::Settings(e) => Error::Settings(e),
        WatchError::Terminal(e) => Error::Io(e),
    })
}
