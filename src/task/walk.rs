//! The walk that discovers task folders: one sorted pass over a root or a `subtasks/`
//! folder, each task folder read into a [`TaskNode`] ([`read_snapshot_in`]) and decided,
//! sub-tasks before parents. Symlinks to folders are followed once (a loop is a warning);
//! a large folder is walked by a few workers, whose parts are joined in walk order.

use super::gates::stale_artifacts;
use super::index::{Index, Records, Tally, TaskCache};
use super::snapshot::{SUBTASKS_DIR, Snapshot, open_child, open_dir, read_snapshot_in};
use super::tree::{TaskNode, TaskTree, decide_node};
use crate::state::{Decision, PhaseConfig, State};
use rustix::fs::{AtFlags, FileType};
use std::collections::HashSet;
use std::fs;
use std::os::fd::BorrowedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// (device, inode) of a `stat` result (the field types differ between targets).
#[allow(clippy::unnecessary_cast)]
fn dev_ino(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

/// Below this many task folders in a root or a `subtasks/` folder, a walk stays on one thread.
pub(super) const PARALLEL_MIN: usize = 64;
/// The most task folders a worker takes at a time.
const CHUNK: usize = 128;

pub(super) struct Walker<'a> {
    pub(super) nodes: Vec<TaskNode>,
    pub(super) warnings: Vec<String>,
    /// (device, inode) of every folder visited, so a symlink loop is seen, not followed.
    pub(super) seen: HashSet<(u64, u64)>,
    /// A worker's view of those visited before its walk began (the roots).
    pub(super) earlier: Option<&'a HashSet<(u64, u64)>>,
    /// The (device, inode) of each node's folder, in `nodes` order: a worker's part is checked
    /// against the parts before it when appended.
    pub(super) ids: Vec<(u64, u64)>,
    /// Whether each node's stale artifacts are read.
    pub(super) staleness: bool,
    /// Whether each node keeps the hashes its staleness took ([`TaskNode::hashed`]).
    pub(super) keep_hashes: bool,
    /// The first folder visited, read already ([`TaskTree::load_task_given`]).
    pub(super) given: Option<Snapshot>,
    /// `Some` when reading through the index (`Some(None)`: none yet, build one).
    pub(super) index: Option<Option<&'a Index>>,
    pub(super) now: i64,
    pub(super) tally: Tally,
    /// The records of the next index, in walk order.
    pub(super) out: Records,
}

impl<'a> Walker<'a> {
    /// Walk the task at `rel` and its sub-tasks (`stale`: with staleness, whose hashes each
    /// node keeps).
    pub(super) fn load_task(
        mut self,
        project: &Path,
        rel: &str,
        config: &PhaseConfig,
        stale: bool,
    ) -> TaskTree {
        self.staleness = stale;
        self.keep_hashes = stale;
        let dir = project.join(rel);
        let depth = rel.matches("/subtasks/").count();
        self.visit_task(open_dir(&dir), dir, rel.to_string(), None, depth);
        self.finish(config)
    }

    pub(super) fn new(index: Option<Option<&'a Index>>, now: i64) -> Self {
        Walker {
            nodes: Vec::new(),
            warnings: Vec::new(),
            seen: HashSet::new(),
            earlier: None,
            ids: Vec::new(),
            staleness: true,
            keep_hashes: false,
            given: None,
            index,
            now,
            tally: Tally::default(),
            out: Records::default(),
        }
    }

    /// Visit the entries of a folder that holds task folders (a root or a `subtasks/`).
    pub(super) fn walk_children(
        &mut self,
        dir: &Path,
        rel: &str,
        parent: Option<usize>,
        depth: usize,
        is_root: bool,
    ) {
        let (names, listing) = self.task_folders(dir, rel, is_root);
        // Each task folder is opened relative to this one (one name to look up, not a path).
        let at = listing.as_ref().and_then(|d| d.fd().ok());
        // Only from the first walker: a worker's own workers would not see what lies above
        // the first parallel folder (`earlier` is one level deep), and a loop back up there
        // would go unnoticed.
        if names.len() >= PARALLEL_MIN && self.earlier.is_none() {
            self.visit_parallel(dir, at, rel, names, parent, depth);
            return;
        }
        for name in names {
            self.visit_child(dir, at, rel, name, parent, depth);
        }
    }

    /// Visit the task folder `name` in `dir` (open as `at`; `rel` from the project).
    fn visit_child(
        &mut self,
        dir: &Path,
        at: Option<BorrowedFd<'_>>,
        rel: &str,
        name: String,
        parent: Option<usize>,
        depth: usize,
    ) {
        let listing = match at {
            Some(at) => open_child(at, &name),
            None => open_dir(&dir.join(&name)),
        };
        let child_rel = format!("{rel}/{name}");
        self.visit_task(listing, dir.join(&name), child_rel, parent, depth);
    }

    /// The names of the task folders in `dir`, sorted, and the folder, open; anything else is a
    /// warning.
    fn task_folders(
        &mut self,
        dir: &Path,
        rel: &str,
        is_root: bool,
    ) -> (Vec<String>, Option<rustix::fs::Dir>) {
        let mut listing = match open_dir(dir) {
            Ok(d) => d,
            Err(e) => {
                self.warnings
                    .push(format!("{rel}: cannot read folder: {e}"));
                return (Vec::new(), None);
            }
        };
        // Names and types only (no path per entry); names are unique, so any sort is stable.
        let mut listed = Vec::new();
        while let Some(entry) = listing.read() {
            match entry {
                Ok(e) if matches!(e.file_name().to_bytes(), b"." | b"..") => {}
                Ok(e) => listed.push((e.file_name().to_bytes().to_vec(), e.file_type())),
                Err(e) => self.warnings.push(format!(
                    "{rel}: cannot read an entry: {}",
                    std::io::Error::from(e)
                )),
            }
        }
        listed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let at = listing.fd().ok();
        let mut tasks = Vec::new();
        for (bytes, file_type) in listed {
            let name = match String::from_utf8(bytes) {
                Ok(name) => name,
                Err(e) => {
                    self.warnings.push(format!(
                        "{rel}/{}: name is not UTF-8; skipped",
                        String::from_utf8_lossy(e.as_bytes())
                    ));
                    continue;
                }
            };
            if name.starts_with('.') {
                continue;
            }
            // The entry's own type saves a stat; a link is followed, and a file system that
            // gives no type is asked.
            let is_dir = match (file_type, at) {
                (FileType::Directory, _) => Ok(true),
                (FileType::Symlink | FileType::Unknown, Some(at)) => {
                    rustix::fs::statat(at, name.as_str(), AtFlags::empty())
                        .map(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
                        .map_err(std::io::Error::from)
                }
                (FileType::Symlink | FileType::Unknown, None) => {
                    fs::metadata(dir.join(&name)).map(|m| m.is_dir())
                }
                _ => Ok(false),
            };
            match is_dir {
                Ok(true) if is_root && name == SUBTASKS_DIR => {
                    self.warnings.push(format!(
                        "{rel}/{name}: a `subtasks` folder directly under {rel}/ (skipped)"
                    ));
                }
                Ok(true) => tasks.push(name),
                Ok(false) => self.warnings.push(format!(
                    "{rel}/{name}: stray file, not a task folder (ignored)"
                )),
                Err(e) => self
                    .warnings
                    .push(format!("{rel}/{name}: cannot read: {e}")),
            }
        }
        (tasks, Some(listing))
    }

    /// Visit the task folders of a root or of a `subtasks/` folder (under `parent`) on every
    /// core, in chunks taken in turn, and append each chunk's part in name order as soon as it
    /// and those before it are done: the result is that of a sequential walk, and the parts
    /// never all wait in memory beside the whole. Reading artifacts is mostly system time,
    /// which a second core halves.
    fn visit_parallel(
        &mut self,
        dir: &Path,
        at: Option<BorrowedFd<'_>>,
        rel: &str,
        names: Vec<String>,
        parent: Option<usize>,
        depth: usize,
    ) {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8);
        // A few chunks per worker, so one slow chunk does not leave the others idle.
        let size = names.len().div_ceil(threads * 4).clamp(8, CHUNK);
        let mut chunks = Vec::new();
        let mut names = names.into_iter();
        loop {
            let chunk: Vec<_> = names.by_ref().take(size).collect();
            if chunk.is_empty() {
                break;
            }
            chunks.push(chunk);
        }
        drop(names);
        let queue = std::sync::Mutex::new(chunks.into_iter().enumerate());
        // The folders seen before (the roots) are shared by the workers while the parts fill
        // `seen` again.
        let earlier = std::mem::take(&mut self.seen);
        let (queue, seen) = (&queue, &earlier);
        let (index, now) = (self.index, self.now);
        let (staleness, keep_hashes) = (self.staleness, self.keep_hashes);
        let (send, done) = std::sync::mpsc::channel::<(usize, Walker)>();
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let send = send.clone();
                    scope.spawn(move || {
                        loop {
                            let next = queue.lock().map(|mut q| q.next());
                            let Ok(Some((k, chunk))) = next else { break };
                            let mut w = Walker {
                                earlier: Some(seen),
                                staleness,
                                keep_hashes,
                                ..Walker::new(index, now)
                            };
                            for name in chunk {
                                w.visit_child(dir, at, rel, name, None, depth);
                            }
                            if send.send((k, w)).is_err() {
                                break;
                            }
                        }
                    })
                })
                .collect();
            drop(send);
            let mut waiting = std::collections::BTreeMap::new();
            let mut next = 0;
            for (k, part) in done {
                waiting.insert(k, part);
                while let Some(part) = waiting.remove(&next) {
                    self.append(part, parent);
                    next += 1;
                }
            }
            for w in workers {
                w.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            }
        });
        let parts = std::mem::replace(&mut self.seen, earlier);
        self.seen.extend(parts);
    }

    /// Append the part a worker walked (its indices shift by the nodes already here), its
    /// top folders as children of `parent`. A folder an earlier part already holds (a second
    /// link to it, which that worker could not know) is skipped with its sub-tasks, as a walk
    /// on one thread skips it.
    fn append(&mut self, part: Walker, parent: Option<usize>) {
        self.warnings.extend(part.warnings);
        let mut kept: Vec<Option<usize>> = Vec::with_capacity(part.nodes.len());
        let mut next = self.nodes.len();
        for (node, id) in part.nodes.iter().zip(&part.ids) {
            let keep = match node.parent {
                // Under a skipped folder: skipped with it, as a walk would not go there.
                Some(p) if kept[p].is_none() => false,
                _ if self.seen.insert(*id) => true,
                _ => {
                    self.warnings.push(format!(
                        "{}: symlink loop or second link to a task already seen; skipped",
                        node.rel
                    ));
                    false
                }
            };
            kept.push(keep.then(|| {
                next += 1;
                next - 1
            }));
        }
        self.nodes.reserve(next - self.nodes.len());
        for ((mut node, id), new) in part.nodes.into_iter().zip(part.ids).zip(&kept) {
            if new.is_none() {
                continue;
            }
            node.parent = match node.parent {
                Some(p) => kept[p],
                None => {
                    let at = self.nodes.len();
                    if let Some(p) = parent {
                        self.nodes[p].children.push(at);
                    }
                    parent
                }
            };
            node.children = node.children.iter().filter_map(|c| kept[*c]).collect();
            self.nodes.push(node);
            self.ids.push(id);
        }
        self.tally.hits += part.tally.hits;
        self.tally.stored_misses += part.tally.stored_misses;
        self.out.append(part.out);
    }

    /// Visit a task folder, opened (as `listing`) by the caller.
    fn visit_task(
        &mut self,
        listing: std::io::Result<rustix::fs::Dir>,
        dir: PathBuf,
        rel: String,
        parent: Option<usize>,
        depth: usize,
    ) {
        // The folder is opened once: its identity (for the loop check) is that of the open
        // folder, and the same descriptor lists it. One that cannot be opened is stat'ed.
        let id = match &listing {
            Ok(d) => d.stat().map(|st| dev_ino(&st)).map_err(Into::into),
            Err(_) => fs::metadata(&dir).map(|m| (m.dev(), m.ino())),
        };
        let id = match id {
            Ok(id) => {
                if self.earlier.is_some_and(|e| e.contains(&id)) || !self.seen.insert(id) {
                    self.warnings.push(format!(
                        "{rel}: symlink loop or second link to a task already seen; skipped"
                    ));
                    return;
                }
                id
            }
            Err(e) => {
                self.warnings.push(format!("{rel}: cannot read: {e}"));
                return;
            }
        };
        let mut snap = match self.index {
            _ if self.given.is_some() => self.given.take().expect("checked"),
            Some(index) => {
                let mut cache = TaskCache::new(index, &rel, self.now, &mut self.tally);
                cache.hash_inputs = self.staleness;
                let snap =
                    read_snapshot_in(listing, &dir, &rel, &mut self.warnings, &mut cache, true);
                cache.finish(&rel, &mut self.out);
                snap
            }
            None => {
                let mut tally = Tally::default();
                let mut cache = TaskCache::none(&mut tally);
                cache.hash_inputs = self.staleness;
                read_snapshot_in(listing, &dir, &rel, &mut self.warnings, &mut cache, true)
            }
        };
        let read_hashes = snap.hashes.take();
        let (stale, hashed) = match self.staleness {
            true => {
                let seed = read_hashes.map(|h| *h).unwrap_or_default();
                let (stale, hashed) = stale_artifacts(&dir, &rel, &snap, seed, &mut self.warnings);
                let kept = (self.keep_hashes && !hashed.is_empty()).then(|| Box::new(hashed));
                (stale, kept)
            }
            false => (Vec::new(), None),
        };
        let (has_subtasks, snap_subtasks_is_dir) = (snap.has_subtasks_dir, snap.subtasks_is_dir);
        let sub = has_subtasks.then(|| (dir.join(SUBTASKS_DIR), format!("{rel}/{SUBTASKS_DIR}")));
        let index = self.nodes.len();
        self.ids.push(id);
        self.nodes.push(TaskNode {
            rel,
            dir,
            parent,
            children: Vec::new(),
            depth,
            snap,
            // Decided in `finish`, once the sub-tasks are read.
            decision: Decision::plain(State::NEW).into(),
            approval: None,
            stale,
            hashed,
        });
        if let Some(p) = parent {
            self.nodes[p].children.push(index);
        }
        if let Some((sub, sub_rel)) = sub {
            if snap_subtasks_is_dir || fs::metadata(&sub).is_ok_and(|m| m.is_dir()) {
                self.walk_children(&sub, &sub_rel, Some(index), depth + 1, false);
            } else {
                self.warnings
                    .push(format!("{sub_rel}: not a folder (ignored)"));
            }
        }
    }

    pub(super) fn finish(mut self, config: &PhaseConfig) -> TaskTree {
        // Children come after their parent in the walk, so deciding in reverse decides every
        // sub-task before its parent.
        for i in (0..self.nodes.len()).rev() {
            decide_node(&mut self.nodes, i, config);
        }
        TaskTree {
            nodes: self.nodes,
            warnings: self.warnings,
            budget: None,
            waves: Default::default(),
        }
    }
}
