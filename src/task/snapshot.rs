//! Reading one task folder into a [`Snapshot`]: which artifacts hold content, what VERDICT.md
//! and DECOMPOSITION.md say, and the control files automaton keeps beside them.
//! The control files it reads are described in [`crate::store::task_files`].

use crate::artifact::decomposition::{Plan, PlanError, parse_decomposition};
use crate::artifact::verdict::{VerdictDoc, parse_verdict};
use crate::state::{Artifact, ArtifactSet, State};
pub use crate::store::task_files::{
    INCOMPLETE_FILE, ORIGIN_FILE, OriginFile, STATE_FILE, STOP_FILE,
};
use crate::task::index::{ORIGIN_ID, STATE_ID, STOP_ID, Tally, TaskCache, artifact_id};
use std::fs;
use std::io::Read;
use std::path::Path;

/// VERDICT.md and DECOMPOSITION.md are read up to this size. The rest of a VERDICT.md is
/// ignored with a warning; a DECOMPOSITION.md over it is refused (a plan cut short would drop
/// its last rows without a word).
pub const MAX_PARSED_BYTES: usize = 1024 * 1024;

pub const SUBTASKS_DIR: &str = "subtasks";
/// Marks (in the task folder) that the plan was sent back for its over-budget rows once; what
/// the decomposition phase was told.
pub const SENT_BACK_FILE: &str = "logs/plan-sent-back.md";
/// The first plan a person rejected (`automaton reject`, at the task-split gate or after):
/// like a plan sent back, the task stays a planned one while the decomposition phase writes
/// the next.
pub const REJECTED_PLAN_FILE: &str = "logs/rejected/DECOMPOSITION-1.md";
/// Written when a PASS verdict is accepted under a verify command, removed once the verify
/// command passed for it: while it is there the task is not complete.
pub const VERIFY_DUE_FILE: &str = "logs/verify-due";
/// The hash of the VERDICT.md the verify command last passed for.
pub const VERIFIED_FILE: &str = "logs/verified";
/// The hash of the IMPLEMENTATION.md the verify command last passed after: until it holds
/// the one there, the phases after implement wait for the command (a retry verifies first).
pub const VERIFIED_IMPLEMENTATION_FILE: &str = "logs/verified-implementation";

/// What was read of one task folder.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Artifacts with content (whitespace-only files and unchanged inherited copies excluded).
    pub artifacts: ArtifactSet,
    /// Boxed, as `origin`: most tasks have none, and a tree holds a snapshot per task.
    pub verdict: Option<Box<VerdictDoc>>,
    pub plan: Option<Result<Plan, PlanError>>,
    /// The word in `.state`, if readable.
    pub state_file: Option<State>,
    pub origin: Option<Box<OriginFile>>,
    pub stop: Option<String>,
    /// `QUESTIONS.md` is there: the agent asked a person, and the task waits for the answers.
    pub questions: bool,
    /// Whether a `subtasks/` folder exists.
    pub has_subtasks_dir: bool,
    /// `logs/plan-sent-back.md` is there ([`SENT_BACK_FILE`]): the plan went back to the
    /// decomposition phase once (or a person rejected a plan, [`REJECTED_PLAN_FILE`]). Looked for only where it can matter: a top folder's logs, no
    /// DECOMPOSITION.md, nothing past SPEC.md.
    pub sent_back: bool,
    /// `logs/verify-due` is there ([`VERIFY_DUE_FILE`]) beside a VERDICT.md: a PASS waits for
    /// the verify command.
    pub verify_due: bool,
    /// Whether the listing said `subtasks` is a folder (not a link to one: that needs a stat).
    pub subtasks_is_dir: bool,
    /// Whether `.state.inputs` exists (the inputs each phase was given, for staleness).
    pub has_inputs: bool,
    /// Whether a `logs/` entry exists (where the run journal lives); without one there is no
    /// journal to read.
    pub has_logs: bool,
    /// Whether `.isolation` exists (the task's worktree record).
    pub has_isolation: bool,
    /// Whether `.state.frozen` exists (the frozen plan and acceptance lists).
    pub has_frozen: bool,
    /// The artifact a phase run that did not finish was writing (`.incomplete`): it does not
    /// count, whatever it holds.
    pub incomplete: Option<Artifact>,
    /// In a folder that records inputs (`.state.inputs`), the SHA-256 of each artifact this
    /// read took whole: its staleness check starts from them instead of reading those files
    /// again ([`crate::task::gates::stale_artifacts`]), and then owns them.
    pub hashes: Option<Box<crate::task::gates::Hashed>>,
}

pub use crate::fsx::content_hash;

/// Read a task folder. `rel` names it in warnings.
pub fn read_snapshot(dir: &Path, rel: &str, warnings: &mut Vec<String>) -> Snapshot {
    let mut tally = Tally::default();
    read_snapshot_with(dir, rel, warnings, &mut TaskCache::none(&mut tally), true)
}

/// [`read_snapshot`] as the judge of a phase run sees it: the artifact `.incomplete` names is
/// read as if the marker were not there (the run that wrote it is being judged).
pub fn read_snapshot_unmarked(dir: &Path, rel: &str, warnings: &mut Vec<String>) -> Snapshot {
    let mut tally = Tally::default();
    read_snapshot_with(dir, rel, warnings, &mut TaskCache::none(&mut tally), false)
}

const DIR_FLAGS: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY
    .union(rustix::fs::OFlags::DIRECTORY)
    .union(rustix::fs::OFlags::CLOEXEC);

/// Open a folder to list it (and to stat and open its files relative to it).
pub fn open_dir(dir: &Path) -> std::io::Result<rustix::fs::Dir> {
    rustix::fs::open(dir, DIR_FLAGS, rustix::fs::Mode::empty())
        .and_then(rustix::fs::Dir::new)
        .map_err(Into::into)
}

/// [`open_dir`] on the folder `name` in the open folder `at`.
pub fn open_child(at: std::os::fd::BorrowedFd<'_>, name: &str) -> std::io::Result<rustix::fs::Dir> {
    rustix::fs::openat(at, name, DIR_FLAGS, rustix::fs::Mode::empty())
        .and_then(rustix::fs::Dir::new)
        .map_err(Into::into)
}

/// Read a task folder through the index: a file whose (size, mtime, ctime, inode) the index
/// knows is not opened; what it said then is what it says now.
pub fn read_snapshot_with(
    dir: &Path,
    rel: &str,
    warnings: &mut Vec<String>,
    cache: &mut TaskCache<'_>,
    honour_incomplete: bool,
) -> Snapshot {
    read_snapshot_in(open_dir(dir), dir, rel, warnings, cache, honour_incomplete)
}

/// [`read_snapshot_with`] on a folder already opened ([`open_dir`]): the walk opens each one
/// once, to tell a loop by the open folder's identity and then to list it.
pub fn read_snapshot_in(
    listing: std::io::Result<rustix::fs::Dir>,
    dir: &Path,
    rel: &str,
    warnings: &mut Vec<String>,
    cache: &mut TaskCache<'_>,
    honour_incomplete: bool,
) -> Snapshot {
    let mut snap = Snapshot::default();
    let mut entries = match listing {
        Ok(entries) => entries,
        Err(e) => {
            warnings.push(format!("{rel}: cannot read folder: {e}"));
            return snap;
        }
    };
    let (mut present, control) = list_folder(&mut entries, &mut snap);
    cache.set_dir(entries);
    let mut folder = Reader {
        dir,
        rel,
        warnings,
        cache,
    };
    if control.contains(&ORIGIN_FILE) {
        snap.origin = folder.origin();
    }
    if control.contains(&INCOMPLETE_FILE) {
        match crate::store::task_files::read_incomplete(dir) {
            Ok(a) => snap.incomplete = a,
            Err(e) => folder.warn(format!("{INCOMPLETE_FILE}: {e}")),
        }
        // An artifact a phase run was still writing never counts.
        if honour_incomplete {
            present.retain(|a| Some(*a) != snap.incomplete);
        }
    }
    // VERDICT.md and DECOMPOSITION.md are parsed anyway: read them once.
    let mut texts: Vec<(Artifact, (String, bool))> = Vec::new();
    for a in present {
        if folder.counts(a, &mut snap, &mut texts) {
            snap.artifacts.insert(a);
        }
    }
    let mut text_of =
        |folder: &mut Reader<'_, '_>, a: Artifact| match texts.iter().position(|(t, _)| *t == a) {
            Some(i) => Some(texts.swap_remove(i).1),
            None => folder.text(a),
        };
    if snap.artifacts.contains(Artifact::Verdict) {
        snap.verdict =
            text_of(&mut folder, Artifact::Verdict).map(|(t, _)| Box::new(parse_verdict(&t)));
    }
    if snap.artifacts.contains(Artifact::Decomposition) {
        snap.plan = text_of(&mut folder, Artifact::Decomposition)
            .map(|(text, cut)| folder.plan(&text, cut));
    }
    snap.verify_due = snap.has_logs
        && snap.artifacts.contains(Artifact::Verdict)
        && dir.join(VERIFY_DUE_FILE).exists()
        && !verified_for_this_verdict(dir);
    snap.sent_back = snap.has_logs
        && snap.artifacts.highest() <= Some(Artifact::Spec)
        && (dir.join(SENT_BACK_FILE).exists() || dir.join(REJECTED_PLAN_FILE).exists());
    if control.contains(&STATE_FILE) {
        snap.state_file = folder.state_word();
    }
    if control.contains(&STOP_FILE) {
        snap.stop = folder.stop_reason();
    }
    snap
}

/// One pass over the folder's listing: the artifacts there (whether they hold content is
/// read next), the control files to read, and the flags a name alone answers.
fn list_folder(
    entries: &mut rustix::fs::Dir,
    snap: &mut Snapshot,
) -> (Vec<Artifact>, Vec<&'static str>) {
    let mut present = Vec::new();
    let mut control = Vec::new();
    while let Some(entry) = entries.read() {
        let Ok(entry) = entry else { break };
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if let Some(a) = Artifact::from_file_name(name) {
            present.push(a);
            continue;
        }
        match name {
            STATE_FILE => control.push(STATE_FILE),
            ORIGIN_FILE => control.push(ORIGIN_FILE),
            STOP_FILE => control.push(STOP_FILE),
            INCOMPLETE_FILE => control.push(INCOMPLETE_FILE),
            SUBTASKS_DIR => {
                snap.has_subtasks_dir = true;
                snap.subtasks_is_dir = entry.file_type() == rustix::fs::FileType::Directory;
            }
            crate::store::inputs::INPUTS_FILE => snap.has_inputs = true,
            "logs" => snap.has_logs = true,
            crate::artifact::questions::QUESTIONS_FILE => snap.questions = true,
            crate::store::isolation::ISOLATION_FILE => snap.has_isolation = true,
            crate::store::frozen::FROZEN_FILE => snap.has_frozen = true,
            _ => {}
        }
    }
    (present, control)
}

/// The files of one task folder, read through its cache; what cannot be read is a warning
/// naming the file (`<rel>/<name>: ...`), never an error.
struct Reader<'r, 'c> {
    dir: &'r Path,
    rel: &'r str,
    warnings: &'r mut Vec<String>,
    cache: &'r mut TaskCache<'c>,
}

impl Reader<'_, '_> {
    /// Warn about a file of the folder: `what` starts with its name.
    fn warn(&mut self, what: String) {
        self.warnings.push(format!("{}/{what}", self.rel));
    }

    /// `.origin`: where a sub-task started and the inherited copies it holds.
    fn origin(&mut self) -> Option<Box<OriginFile>> {
        let path = self.dir.join(ORIGIN_FILE);
        match self
            .cache
            .bytes(ORIGIN_ID, &path, usize::MAX)
            .map(|(b, _)| serde_json::from_slice::<OriginFile>(&b))
        {
            Ok(Ok(o)) if State::parse(&o.start).is_some() => return Some(Box::new(o)),
            Ok(Ok(o)) => self.warn(format!(
                "{ORIGIN_FILE}: unknown start state `{}` (ignored)",
                o.start
            )),
            Ok(Err(e)) => self.warn(format!("{ORIGIN_FILE}: not valid JSON ({e}); ignored")),
            Err(e) => self.warn(format!("{ORIGIN_FILE}: cannot read: {e}")),
        }
        None
    }

    /// Whether artifact `a` counts: it holds more than whitespace, and is not an unchanged
    /// copy inherited from the parent. VERDICT.md and DECOMPOSITION.md are read whole (into
    /// `texts`, to be parsed); in a folder that records inputs, each artifact read whole is
    /// hashed into `snap.hashes`.
    fn counts(
        &mut self,
        a: Artifact,
        snap: &mut Snapshot,
        texts: &mut Vec<(Artifact, (String, bool))>,
    ) -> bool {
        let path = self.dir.join(a.file_name());
        let inherited = snap
            .origin
            .as_ref()
            .and_then(|o| o.inherited.get(a.file_name()));
        if let Some(hash) = inherited {
            return match crate::fsx::read(&path) {
                Ok(bytes) => has_content(&bytes) && content_hash(&bytes) != *hash,
                Err(e) => {
                    self.warn(format!("{}: cannot read: {e}", a.file_name()));
                    false
                }
            };
        }
        if matches!(a, Artifact::Verdict | Artifact::Decomposition) {
            return match self.text(a) {
                Some(text) if has_content(text.0.as_bytes()) => {
                    texts.push((a, text));
                    true
                }
                _ => false,
            };
        }
        let mut hash = None;
        let wanted = (snap.has_inputs && self.cache.hash_inputs).then_some(&mut hash);
        let probed = self
            .cache
            .probe(artifact_id(a), &path, |f| probe_content(f, wanted));
        if let Some(hash) = hash {
            let hashes = snap.hashes.get_or_insert_default();
            hashes.insert(a.file_name().to_string(), Some(hash));
        }
        match probed {
            Ok((content, utf8_ok)) => {
                if !utf8_ok {
                    self.warn(format!("{}: not valid UTF-8", a.file_name()));
                }
                content
            }
            Err(e) => {
                self.warn(format!("{}: cannot read: {e}", a.file_name()));
                false
            }
        }
    }

    /// DECOMPOSITION.md's plan; one over the size cap (`cut`) is refused, never read short.
    fn plan(&self, text: &str, cut: bool) -> Result<Plan, PlanError> {
        if !cut {
            return parse_decomposition(text);
        }
        let size = fs::metadata(self.dir.join(Artifact::Decomposition.file_name()))
            .map_or(String::new(), |m| {
                format!(" ({} bytes)", crate::units::thousands(m.len()))
            });
        Err(PlanError::one(
            0,
            format!(
                "the file is over the {} MiB size cap of a plan{size}, and a plan is never \
                 read cut short: split the work into fewer, larger sub-tasks (a nested \
                 plan can hold the rest)",
                MAX_PARSED_BYTES / (1024 * 1024)
            ),
        ))
    }

    /// The word in `.state`. One word is expected; a huge file is not read whole.
    fn state_word(&mut self) -> Option<State> {
        match self.cache.bytes(STATE_ID, &self.dir.join(STATE_FILE), 256) {
            Ok((bytes, _)) => {
                let word = String::from_utf8_lossy(&bytes);
                let state = State::parse(&word);
                if state.is_none() {
                    self.warn(format!(
                        "{STATE_FILE}: unknown state `{}` (ignored; the artifacts decide)",
                        word.trim().chars().take(40).collect::<String>()
                    ));
                }
                state
            }
            Err(e) => {
                self.warn(format!("{STATE_FILE}: cannot read: {e}"));
                None
            }
        }
    }

    /// Why the task stopped, as `.stop` says (an empty one: stopped by the orchestrator).
    fn stop_reason(&mut self) -> Option<String> {
        match self
            .cache
            .bytes(STOP_ID, &self.dir.join(STOP_FILE), usize::MAX)
        {
            Ok((bytes, _)) => {
                let text = String::from_utf8_lossy(&bytes).trim().to_string();
                Some(if text.is_empty() {
                    "stopped by the orchestrator".into()
                } else {
                    text
                })
            }
            Err(e) => {
                self.warn(format!("{STOP_FILE}: cannot read: {e}"));
                None
            }
        }
    }

    /// The text of an artifact, up to [`MAX_PARSED_BYTES`], and whether it was cut there (a
    /// cut VERDICT.md is warned about here; a cut DECOMPOSITION.md is [`Reader::plan`]'s
    /// refusal).
    fn text(&mut self, artifact: Artifact) -> Option<(String, bool)> {
        let path = self.dir.join(artifact.file_name());
        let name = artifact.file_name();
        match self
            .cache
            .bytes(artifact_id(artifact), &path, MAX_PARSED_BYTES)
        {
            Ok((bytes, truncated)) => {
                if truncated && artifact != Artifact::Decomposition {
                    let size = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                    self.warn(format!(
                        "{name}: {:.1} MB; only the first {} KiB were read",
                        size as f64 / 1e6,
                        MAX_PARSED_BYTES / 1024
                    ));
                }
                let text = match String::from_utf8(bytes) {
                    Ok(t) => t,
                    Err(e) => {
                        if !(truncated && e.utf8_error().error_len().is_none()) {
                            self.warn(format!(
                                "{name}: not valid UTF-8; read with replacement characters"
                            ));
                        }
                        String::from_utf8_lossy(e.as_bytes()).into_owned()
                    }
                };
                Some((text, truncated))
            }
            Err(e) => {
                self.warn(format!("{name}: cannot read: {e}"));
                None
            }
        }
    }
}

fn has_content(bytes: &[u8]) -> bool {
    bytes.iter().any(|b| !b.is_ascii_whitespace())
}

/// Whether a file holds anything but whitespace (in its first [`MAX_PARSED_BYTES`]), and
/// whether the first part read is valid UTF-8; read only as far as needed, unless `hash` is
/// asked for: then to the end (within that limit), and `hash` set to its SHA-256 when the
/// end was reached.
fn probe_content(
    file: &mut std::fs::File,
    mut hash: Option<&mut Option<String>>,
) -> std::io::Result<(bool, bool)> {
    let mut buf = [0u8; 4096];
    let mut whole = Vec::new();
    let (mut content, mut utf8_ok, mut read_total) = (false, true, 0usize);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            if let Some(hash) = hash.as_deref_mut() {
                *hash = Some(crate::store::approvals::sha256_hex(&whole));
            }
            break;
        }
        if read_total == 0
            && let Err(e) = std::str::from_utf8(&buf[..n])
        {
            // A character cut at the buffer's end is fine; anything else is not UTF-8.
            utf8_ok = e.error_len().is_none();
        }
        content |= has_content(&buf[..n]);
        read_total += n;
        if hash.is_some() {
            whole.extend_from_slice(&buf[..n]);
        }
        if read_total >= MAX_PARSED_BYTES || (content && hash.is_none()) {
            break;
        }
    }
    Ok((content, utf8_ok))
}

/// Whether the verify command already passed for this very VERDICT.md (`logs/verified` holds
/// its hash): a run killed between recording that pass and clearing `logs/verify-due` left a
/// verified PASS, which must be neither verified nor judged again. `false` without a
/// VERDICT.md. The run's verify step asks it too.
pub fn verified_for_this_verdict(dir: &Path) -> bool {
    let verdict = crate::fsx::read(dir.join(Artifact::Verdict.file_name()));
    let verified = crate::fsx::read_to_string(dir.join(VERIFIED_FILE));
    matches!((verdict, verified), (Ok(v), Ok(h)) if crate::fsx::content_hash(&v) == h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::approvals::sha256_file;

    /// In a folder that records inputs the artifacts are read whole and hashed, with the same
    /// answers as the plain probe (whitespace only does not count, bad UTF-8 warns); in one
    /// that does not, nothing is hashed.
    #[test]
    fn a_folder_recording_inputs_hashes_what_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        fs::write(t.join("SPEC.md"), " \n\t\n").unwrap();
        fs::write(t.join("DESIGN.md"), b"\xff\xfe design\n").unwrap();
        fs::write(t.join("TEST_PLAN.md"), "plan\n".repeat(2000)).unwrap();
        let plain = {
            let mut warnings = Vec::new();
            let snap = read_snapshot(t, "t", &mut warnings);
            assert!(snap.hashes.is_none());
            (snap.artifacts, warnings)
        };
        assert!(!plain.0.contains(Artifact::Spec));
        assert!(plain.0.contains(Artifact::Design) && plain.0.contains(Artifact::TestPlan));
        assert_eq!(plain.1.len(), 1, "{:?}", plain.1);
        fs::write(t.join(crate::store::inputs::INPUTS_FILE), "").unwrap();
        let mut warnings = Vec::new();
        let snap = read_snapshot(t, "t", &mut warnings);
        assert_eq!((snap.artifacts, warnings), plain);
        let hashes = snap.hashes.expect("hashed");
        assert_eq!(hashes.len(), 3, "{hashes:?}");
        for name in ["SPEC.md", "DESIGN.md", "TEST_PLAN.md"] {
            assert_eq!(hashes[name], sha256_file(&t.join(name)), "{name}");
        }
    }
}
