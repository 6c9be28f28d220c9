//! Parsers of the artifacts whose content matters: VERDICT.md and DECOMPOSITION.md.
pub mod decomposition;
pub mod verdict;
