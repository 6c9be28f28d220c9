//! The kinds of agent automaton knows how to run, as `- **Agent**:` spells them. A leaf: the
//! settings validate the word against [`AgentKind::WORDS`], the runner picks its adapter by it.

/// One kind of agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// Any shell command: judged by its exit code and artifact only.
    Command,
    Claude,
    Codex,
    Aider,
    Gemini,
    Opencode,
}

impl AgentKind {
    pub const ALL: [AgentKind; 6] = [
        AgentKind::Command,
        AgentKind::Claude,
        AgentKind::Codex,
        AgentKind::Aider,
        AgentKind::Gemini,
        AgentKind::Opencode,
    ];
    /// The words, in the order of [`AgentKind::ALL`].
    pub const WORDS: [&'static str; 6] =
        ["command", "claude", "codex", "aider", "gemini", "opencode"];

    pub fn word(self) -> &'static str {
        Self::WORDS[self as usize]
    }

    pub fn parse(word: &str) -> Option<AgentKind> {
        Self::ALL.into_iter().find(|k| k.word() == word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for k in AgentKind::ALL {
            assert_eq!(AgentKind::parse(k.word()), Some(k));
        }
        assert_eq!(AgentKind::parse("gemini"), Some(AgentKind::Gemini));
        assert_eq!(AgentKind::parse("open-code"), None);
    }
}
