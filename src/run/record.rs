//! What a finished phase leaves in the store: its journal line.

use super::adapter::PhaseReport;
use super::agent::{AgentEnd, AgentOutcome};
use crate::store::journal::{Entry, JOURNAL_VERSION};

/// The journal line of one phase run.
pub fn journal_entry(
    phase: &str,
    attempt: u32,
    outcome: &AgentOutcome,
    agent: &str,
    report: &PhaseReport,
) -> Entry {
    let (end, exit_code) = match &outcome.end {
        AgentEnd::Exited(s) => ("exited", s.code),
        AgentEnd::PhaseTimeout => ("phase_timeout", None),
        AgentEnd::TotalTimeout => ("total_timeout", None),
        AgentEnd::Stalled => ("stalled", None),
        AgentEnd::Cancelled => ("cancelled", None),
    };
    Entry {
        v: JOURNAL_VERSION,
        phase: phase.to_string(),
        attempt,
        finished_at: super::progress::unix_seconds(),
        seconds: outcome.duration.as_secs_f64(),
        end: end.to_string(),
        exit_code,
        contract_met: outcome.contract_met,
        agent: agent.to_string(),
        ok: report.ok,
        error: report.error.clone(),
        session_id: report.session_id.clone(),
        model: report.model.clone(),
        input_tokens: report.input_tokens,
        output_tokens: report.output_tokens,
        tokens: report.tokens(),
        cost_usd: report.cost_usd,
        context_window: report.context_window,
        rework_round: None,
        refused_hosts: Default::default(),
    }
}
