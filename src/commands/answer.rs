//! `automaton answer <task> N=option|N="free text"…`: a person answers the questions an agent
//! asked (QUESTIONS.md). The answers are appended to the task's DECISIONS.md (who, when),
//! which every later phase of the task and its sub-tasks is given; QUESTIONS.md moves to
//! `logs/questions/QUESTIONS-<n>.md`, and the phase that asked runs again on the next
//! `orchestrate`.

use super::gates::{load, reset_state, take_lock};
use super::{Ctx, Error, out};
use crate::artifact::questions::{
    Answer, DECISIONS_FILE, QUESTIONS_FILE, Question, answer_lines, parse_questions, read_answer,
};
use crate::cli::AnswerArgs;
use crate::exit;
use crate::store::approvals;
use std::fmt::Write as _;

pub fn answer_command(ctx: &Ctx, args: &AnswerArgs) -> super::Result<u8> {
    let _lock = take_lock(ctx)?;
    let (settings, rel, tree) = load(ctx, &args.task)?;
    let dir = &tree.nodes[0].dir;
    let path = dir.join(QUESTIONS_FILE);
    let text = match crate::fsx::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Input(format!(
                "{rel} has no {QUESTIONS_FILE}: no question waits for an answer"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let questions = parse_questions(&text)
        .map_err(|why| Error::Input(format!("{rel}/{QUESTIONS_FILE}: {why}")))?;
    if args.answers.is_empty() {
        out::println(format_args!(
            "{}\nAnswer each: {} answer {rel} 1=<option number or text> 2=\"free text\" …",
            listing(&rel, &questions),
            ctx.command_prefix()
        ))?;
        return Ok(exit::OK);
    }
    let answers = match_answers(&questions, &args.answers)
        .map_err(|why| Error::Usage(format!("{why}\n\n{}", listing(&rel, &questions))))?;
    let mut block = format!(
        "## Answers of {} by {}\n\n",
        approvals::now(),
        approvals::who()
    );
    for (q, a) in questions.iter().zip(&answers) {
        let said = match a {
            Answer::Option(i) => {
                let rec = if q.recommended == Some(*i) {
                    ", recommended"
                } else {
                    ""
                };
                format!("{} (option {}{rec})", q.options[*i], i + 1)
            }
            Answer::FreeText(t) => format!("{t} (in their own words)"),
        };
        let _ = writeln!(block, "### {}. {}\n\nAnswer: {said}\n", q.number, q.text);
    }
    // The answers first, durably; a run killed before QUESTIONS.md moves only asks again.
    crate::fsx::append_line(
        &dir.join(DECISIONS_FILE),
        block.trim_end(),
        crate::fsx::Durability::Durable,
    )?;
    let kept = dir.join("logs/questions");
    std::fs::create_dir_all(&kept)?;
    let n = (1..)
        .find(|n| !kept.join(format!("QUESTIONS-{n}.md")).exists())
        .unwrap_or(1);
    std::fs::rename(&path, kept.join(format!("QUESTIONS-{n}.md")))?;
    let state = reset_state(ctx, &settings, &rel)?;
    out::println(format_args!(
        "Recorded {} answer{} in {rel}/{DECISIONS_FILE} (the questions are kept in \
         {rel}/logs/questions/QUESTIONS-{n}.md); {rel} is back at `{state}`\nNext:\n  {} \
         orchestrate --task {rel}",
        answers.len(),
        if answers.len() == 1 { "" } else { "s" },
        ctx.command_prefix()
    ))?;
    Ok(exit::OK)
}

/// Each question's answer from the `N=value` arguments: every question answered once.
fn match_answers(questions: &[Question], given: &[String]) -> Result<Vec<Answer>, String> {
    let mut answers: Vec<Option<Answer>> = vec![None; questions.len()];
    for arg in given {
        let (n, value) = arg
            .split_once('=')
            .and_then(|(n, v)| Some((n.trim().parse::<usize>().ok()?, v)))
            .ok_or_else(|| {
                format!("`{arg}`: an answer reads N=<option number or text> or N=\"free text\"")
            })?;
        let q = questions.get(n.wrapping_sub(1)).ok_or_else(|| {
            format!(
                "`{arg}`: there is no question {n} (1 to {})",
                questions.len()
            )
        })?;
        if value.trim().is_empty() {
            return Err(format!("`{arg}`: the answer to question {n} is empty"));
        }
        let answer = read_answer(q, value).map_err(|why| format!("`{arg}`: {why}"))?;
        if answers[n - 1].replace(answer).is_some() {
            return Err(format!("question {n} is answered twice"));
        }
    }
    let missing: Vec<String> = answers
        .iter()
        .enumerate()
        .filter(|(_, a)| a.is_none())
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no answer to question{} {}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        ));
    }
    Ok(answers.into_iter().flatten().collect())
}

/// The questions with their options, as `answer` shows them when an answer is missing.
pub fn listing(rel: &str, questions: &[Question]) -> String {
    let mut s = format!("{rel}/{QUESTIONS_FILE} asks:\n");
    for q in questions {
        let _ = writeln!(s, "  {}. {}", q.number, q.text);
        for line in answer_lines(q.number, &q.options, q.recommended) {
            let _ = writeln!(s, "     {line}");
        }
    }
    s.trim_end().to_string()
}
