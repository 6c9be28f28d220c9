//! `automaton reject` at the merge gate (`Approve before: merge`): the person looked at what
//! the branch changes and sends the task back for a rework round, with their reason as the
//! round's finding. The round is made as bounded rework makes one (`logs/rework/<n>/`, the
//! artifacts from implement on moved there, nothing deleted), even with `- **Rework**: 0`:
//! a person asked for it, so no limit of the agents' own rounds applies.

use super::gates::reset_state;
use super::{Ctx, out};
use crate::plan::gate::Gate;
use crate::settings::Settings;
use crate::store::approvals::{self, APPROVALS_VERSION, Record, RecordKind};
use crate::store::rework::{self, REJECTED_AT_MERGE};
use crate::store::{inputs, isolation};
use crate::task::TaskNode;
use crate::task::gates::decided_on;

pub(super) fn reject_merge(
    ctx: &Ctx,
    settings: &Settings,
    rel: &str,
    node: &TaskNode,
    reason: &str,
) -> super::Result<u8> {
    let dir = &node.dir;
    let who = approvals::who();
    let when = approvals::now();
    // What the person saw and rejected, taken before the round moves it.
    let seen = decided_on(dir, &node.snap, Gate::Merge);
    // With the branch's tip as the round's base, the review phases get only what the round
    // changes.
    let base = isolation::read(dir).and_then(|r| {
        let wt = std::path::Path::new(&r.worktree);
        crate::git::Repo::at(wt).head(wt).ok()
    });
    let moved = rework::set_aside();
    let findings = format!(
        "A person ({who}, at {when}) looked at what the branch changes at the merge gate \
         (`- **Approve before**: merge`) and sent it back instead of merging it. Their \
         reason:\n\n{reason}"
    );
    let cause = format!("{REJECTED_AT_MERGE}: {reason}");
    let round = rework::begin(dir, &cause, base.as_deref(), &findings, &moved)?;
    inputs::forget(dir, &moved)?;
    crate::fsx::remove_if_there(&dir.join(crate::task::snapshot::VERIFY_DUE_FILE))?;
    let kept = round
        .strip_prefix(dir)
        .unwrap_or(&round)
        .display()
        .to_string();
    // After the round: a crash between the two leaves a round to run, and the gate, with no
    // decision recorded on it, waits again once the task is complete.
    approvals::append(
        dir,
        &Record {
            v: APPROVALS_VERSION,
            kind: RecordKind::Reject,
            gate: Some(Gate::Merge.word().to_string()),
            who,
            when,
            note: None,
            reason: Some(reason.to_string()),
            artifacts: seen,
            // The reason reaches implement once, as the round's finding, not also as a
            // rejection of its artifact.
            phase: None,
            rejected: Some(kept.clone()),
        },
    )?;
    let state = reset_state(ctx, settings, rel)?;
    let prefix = ctx.command_prefix();
    out::println(format_args!(
        "Sent {rel} back from the merge gate: rework round {n} has your reason as its finding \
         (what it set aside is in {rel}/{kept}/); implement runs again (state `{state}`), then \
         the review phases, then the merge gate again\nNext:\n  {prefix} orchestrate --task {rel}",
        n = rework::count(dir),
    ))?;
    Ok(crate::exit::OK)
}
