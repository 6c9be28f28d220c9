//! QUESTIONS.md: what an agent asks a person instead of guessing. A phase may end by writing
//! it in the task folder instead of its artifact; the task then waits until `automaton answer`
//! records the answers in DECISIONS.md.
//!
//! ```markdown
//! ## 1. Which store should the cache use?
//! The service already runs Redis in production.
//! - Redis (recommended)
//! - SQLite
//! - In memory
//! ```
//!
//! One `## <n>. <question>` heading per question, numbered from 1 in order; below it, any
//! lines of context, then 0 options (a free-text question) or 2 to 4 options as `- ` items,
//! the recommended one first and marked `(recommended)`. Text before the first heading is
//! ignored.

pub const QUESTIONS_FILE: &str = "QUESTIONS.md";
pub const DECISIONS_FILE: &str = "DECISIONS.md";
/// The mark of the recommended option.
const RECOMMENDED: &str = "(recommended)";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub number: u32,
    pub text: String,
    /// Context lines under the heading, joined.
    pub context: String,
    /// The options, without the `(recommended)` mark.
    pub options: Vec<String>,
    /// Index into `options` of the recommended one.
    pub recommended: Option<usize>,
}

/// Parse QUESTIONS.md; an error names the line (`line 4: …`).
pub fn parse_questions(text: &str) -> Result<Vec<Question>, String> {
    let mut questions: Vec<Question> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = i + 1;
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix("## ") {
            let (number, question) = heading
                .split_once('.')
                .and_then(|(n, q)| Some((n.trim().parse::<u32>().ok()?, q.trim())))
                .ok_or_else(|| {
                    format!(
                        "line {at}: a question heading reads `## <n>. <question>`, not `{trimmed}`"
                    )
                })?;
            let expected = questions.len() as u32 + 1;
            if number != expected {
                return Err(format!(
                    "line {at}: question {number} should be numbered {expected} (numbered from 1, in order)"
                ));
            }
            if question.is_empty() {
                return Err(format!("line {at}: question {number} has no text"));
            }
            questions.push(Question {
                number,
                text: question.to_string(),
                context: String::new(),
                options: Vec::new(),
                recommended: None,
            });
            continue;
        }
        let Some(q) = questions.last_mut() else {
            continue;
        };
        if let Some(item) = trimmed.strip_prefix("- ") {
            let (option, marked) = match item.trim().strip_suffix(RECOMMENDED) {
                Some(o) => (o.trim(), true),
                None => (item.trim(), false),
            };
            if marked {
                if q.recommended.is_some() {
                    return Err(format!(
                        "line {at}: question {} has a second option marked {RECOMMENDED}",
                        q.number
                    ));
                }
                q.recommended = Some(q.options.len());
            }
            q.options.push(option.to_string());
        } else if !trimmed.is_empty() {
            if !q.context.is_empty() {
                q.context.push(' ');
            }
            q.context.push_str(trimmed);
        }
    }
    if questions.is_empty() {
        return Err("no question: each starts with a `## 1. <question>` heading".into());
    }
    if let Some(q) = questions
        .iter()
        .find(|q| q.options.len() == 1 || q.options.len() > 4)
    {
        return Err(format!(
            "question {} has {} option{}: give 2 to 4, or none for a free-text answer",
            q.number,
            q.options.len(),
            if q.options.len() == 1 { "" } else { "s" }
        ));
    }
    Ok(questions)
}

/// How `status` and `answer` show question `number`'s choices, one line each: its options as
/// `answer` takes them (`1=2  SQLite`, the recommended one marked), or its free-text form.
/// `recommended` indexes `options`.
pub fn answer_lines(number: u32, options: &[String], recommended: Option<usize>) -> Vec<String> {
    if options.is_empty() {
        return vec![format!("{number}=\"…\"  (free text)")];
    }
    options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let rec = if recommended == Some(i) {
                " (recommended)"
            } else {
                ""
            };
            format!("{number}={}  {o}{rec}", i + 1)
        })
        .collect()
}

/// What a person chose for one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// One of the options (its index).
    Option(usize),
    FreeText(String),
}

/// Read `value` (of `N=value`) as an answer to `q`: an option's number (`2`), an option's
/// text (case and surrounding space aside; `16` of the options `8`, `16`, `32`), or else free
/// text. A bare number that is neither is refused (a slip, not an answer); where a question
/// has no options, a number is free text.
pub fn read_answer(q: &Question, value: &str) -> Result<Answer, String> {
    let v = value.trim();
    let number = v.parse::<usize>().ok();
    if let Some(n) = number.filter(|n| (1..=q.options.len()).contains(n)) {
        return Ok(Answer::Option(n - 1));
    }
    if let Some(i) = q.options.iter().position(|o| o.eq_ignore_ascii_case(v)) {
        return Ok(Answer::Option(i));
    }
    match number {
        Some(n) if !q.options.is_empty() => Err(format!(
            "question {} has options 1 to {}, not {n} (answer with an option's number or \
             text, or in words)",
            q.number,
            q.options.len()
        )),
        _ => Ok(Answer::FreeText(v.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# Questions\n\n## 1. Which store should the cache use?\nWe run Redis.\n- Redis (recommended)\n- SQLite\n- In memory\n\n## 2. What should the endpoint be called?\n";

    #[test]
    fn questions_options_and_the_recommended_one_are_read() {
        let qs = parse_questions(SAMPLE).unwrap();
        assert_eq!(qs.len(), 2);
        assert_eq!(qs[0].text, "Which store should the cache use?");
        assert_eq!(qs[0].context, "We run Redis.");
        assert_eq!(qs[0].options, ["Redis", "SQLite", "In memory"]);
        assert_eq!(qs[0].recommended, Some(0));
        assert!(qs[1].options.is_empty());
        assert_eq!(read_answer(&qs[0], "2"), Ok(Answer::Option(1)));
        assert_eq!(read_answer(&qs[0], " in memory "), Ok(Answer::Option(2)));
        assert_eq!(
            read_answer(&qs[0], "Postgres"),
            Ok(Answer::FreeText("Postgres".into()))
        );
        assert_eq!(read_answer(&qs[1], "1"), Ok(Answer::FreeText("1".into())));
        // A number that is none of the options is a slip.
        for slip in ["0", "4"] {
            let e = read_answer(&qs[0], slip).unwrap_err();
            assert!(e.starts_with("question 1 has options 1 to 3, not "), "{e}");
        }
        // Options that are numbers are chosen by their text too, where the number is no
        // option's position.
        let sizes = parse_questions("## 1. Page size?\n- 8\n- 16\n- 32\n").unwrap();
        assert_eq!(read_answer(&sizes[0], "16"), Ok(Answer::Option(1)));
        assert_eq!(read_answer(&sizes[0], "2"), Ok(Answer::Option(1)));
        assert!(read_answer(&sizes[0], "64").is_err());
    }

    #[test]
    fn bad_files_are_named_with_their_line() {
        assert_eq!(
            parse_questions("## 2. Why?\n").unwrap_err(),
            "line 1: question 2 should be numbered 1 (numbered from 1, in order)"
        );
        assert_eq!(
            parse_questions("intro\n## Why?\n").unwrap_err(),
            "line 2: a question heading reads `## <n>. <question>`, not `## Why?`"
        );
        assert_eq!(
            parse_questions("## 1. Why?\n- only one\n").unwrap_err(),
            "question 1 has 1 option: give 2 to 4, or none for a free-text answer"
        );
        assert!(parse_questions("nothing asked\n").is_err());
    }
}
