//! Parsers of the artifacts whose content matters: VERDICT.md, DECOMPOSITION.md and an agent's
//! QUESTIONS.md.
pub mod decomposition;
pub mod questions;
pub mod verdict;
