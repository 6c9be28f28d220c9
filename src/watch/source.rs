//! Where `watch` learns of changes: file notifications on the task roots and `.automaton/`
//! (inotify on Linux, through notify), or, where those cannot be had (no inotify, its watch
//! limit reached, `AUTOMATON_WATCH_POLL` set), a slow poll that re-reads everything.

use super::model::Touched;
use notify::{EventKind, RecursiveMode, Watcher, event::AccessKind, event::AccessMode};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// The poll interval where notifications are not available.
const POLL: Duration = Duration::from_secs(2);
/// Events that arrive this close together are taken in one refresh (an agent writing an
/// artifact and `.state` is one change, not two).
const COALESCE: Duration = Duration::from_millis(15);

pub struct Source {
    project: PathBuf,
    watcher: Option<notify::RecommendedWatcher>,
    rx: Receiver<notify::Result<notify::Event>>,
    /// The folders watched so far (a root created later is added when it appears).
    watched: Vec<PathBuf>,
    poll: Option<Duration>,
    last_poll: Instant,
    /// Why notifications are not used, to show.
    pub note: Option<String>,
}

impl Source {
    /// Watch `project`; `forced`: poll on this timer instead of file notifications.
    pub fn start(project: &Path, forced: Option<Duration>) -> Source {
        let (tx, rx) = channel();
        let mut s = Source {
            project: project.to_path_buf(),
            watcher: None,
            rx,
            watched: Vec::new(),
            poll: forced,
            last_poll: Instant::now(),
            note: None,
        };
        if forced.is_some() {
            return s;
        }
        match notify::recommended_watcher(move |e| {
            let _ = tx.send(e);
        }) {
            Ok(w) => {
                s.watcher = Some(w);
                s.ensure_watches();
            }
            Err(e) => s.fall_back(&e.to_string()),
        }
        s
    }

    fn fall_back(&mut self, why: &str) {
        self.watcher = None;
        self.poll = Some(POLL);
        self.note = Some(format!(
            "file notifications unavailable ({why}); re-reading every {}s",
            POLL.as_secs()
        ));
    }

    /// Watch the project folder (to see a root appear), `.automaton/` and both roots.
    fn ensure_watches(&mut self) {
        let targets = [
            (self.project.clone(), RecursiveMode::NonRecursive),
            (self.project.join(".automaton"), RecursiveMode::NonRecursive),
            (self.project.join("tasks"), RecursiveMode::Recursive),
            (
                self.project.join(".automaton/tasks"),
                RecursiveMode::Recursive,
            ),
        ];
        let Some(w) = self.watcher.as_mut() else {
            return;
        };
        let mut failed = None;
        for (dir, mode) in targets {
            if self.watched.contains(&dir) || !dir.is_dir() {
                continue;
            }
            match w.watch(&dir, mode) {
                Ok(()) => self.watched.push(dir),
                Err(e) => failed = Some(format!("{}: {e}", dir.display())),
            }
        }
        // A root that vanished loses its watch; forget it so it is added again if it returns.
        self.watched.retain(|d| d.is_dir());
        if let Some(why) = failed {
            self.fall_back(&why);
        }
    }

    /// Wait up to `timeout` for changes; what they touched (empty when nothing changed).
    pub fn wait(&mut self, timeout: Duration) -> BTreeSet<Touched> {
        let mut out = BTreeSet::new();
        if let Some(every) = self.poll {
            let due = (self.last_poll + every).saturating_duration_since(Instant::now());
            if due > timeout {
                std::thread::sleep(timeout);
                return out;
            }
            std::thread::sleep(due);
            self.last_poll = Instant::now();
            out.insert(Touched::All);
            return out;
        }
        let first = match self.rx.recv_timeout(timeout) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => return out,
            Err(RecvTimeoutError::Disconnected) => {
                self.fall_back("the watcher stopped");
                out.insert(Touched::All);
                return out;
            }
        };
        self.take(first, &mut out);
        let until = Instant::now() + COALESCE;
        while let Ok(e) = self
            .rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            self.take(e, &mut out);
        }
        if out.contains(&Touched::All) {
            self.ensure_watches();
        }
        out
    }

    fn take(&mut self, event: notify::Result<notify::Event>, out: &mut BTreeSet<Touched>) {
        let event = match event {
            Ok(e) => e,
            // An overflowed queue or a lost watch: read everything again.
            Err(_) => {
                out.insert(Touched::All);
                return;
            }
        };
        // Reading a file is an event too (inotify reports opens): ours must not loop.
        if let EventKind::Access(a) = event.kind
            && a != AccessKind::Close(AccessMode::Write)
        {
            return;
        }
        if event.need_rescan() {
            out.insert(Touched::All);
        }
        out.extend(
            event
                .paths
                .iter()
                .filter_map(|p| super::model::touched(&self.project, p)),
        );
    }
}
