//! The one place that writes files: atomically (temp file in the same folder, rename), so a
//! reader or a crash sees the old content or the new, never half of it.
//!
//! # Durability: what must survive a power cut
//!
//! Every file is replaced by rename, so a reader never sees it half-written. Only files that
//! cannot be rebuilt are also `fsync`ed (the file, then its folder, so the rename itself
//! survives); a file that is re-derived is not, because after a power cut losing its last
//! version costs nothing but a redo.
//!
//! | file | durability | why |
//! |---|---|---|
//! | artifacts (SPEC.md … VERDICT.md) | the agent's | written by the agents, not by automaton; they decide the state |
//! | `TASK.md` | [`Durability::Durable`] | the request a task was made from: nothing else holds it |
//! | `.origin` | durable | the start state and inherited hashes of copied reports |
//! | `.stop` | durable | why a run stopped a task (a human reads it) |
//! | `logs/verified` | durable | which VERDICT.md the verify command passed |
//! | `.isolation`, git `info/exclude` | durable | the worktree and branch of a task |
//! | `PARENT_SPEC.md`, `VRAM_CONFIG.md` | rebuildable | a sub-task's scope, derived from its row of the parent's DECOMPOSITION.md; the next run writes a lost one again |
//! | `logs/agent.pid` | rebuildable (durable for `slurm`) | after a power cut no local or tmux agent runs, so there is nothing to name; a slurm job outlives this machine |
//! | `.state.frozen` | durable; a freeze's fsync in the background ([`crate::task::frozen::freeze`]: as test_design ends, or before a later phase when none is there), the other writes' inline | the frozen acceptance hashes; an emptied one stops the task (fails closed), a lost one is frozen again before the next phase |
//! | `.incomplete` | durable, fsynced in the background as the agent starts ([`sync_in_background`]; those asked for within [`SYNC_INTERVAL`] of the last round wait and are done at once, but not the marker of a phase that ended meanwhile; all done before automaton exits) | the artifact a phase run is writing: without it, what a power cut left half-written would be judged; the agent's own writes reach the disk later |
//! | a task folder's own entry | durable ([`crate::task::create_task`]); a sub-task's fsynced in the background, once for all a decomposition makes | the durable files above are in it; a lost sub-task folder is made again from the parent's DECOMPOSITION.md |
//! | `.state` | [`Durability::Rebuildable`] | re-derived from the artifacts; the driver rewrites it when it disagrees |
//! | `.state.inputs` | rebuildable | a lost record only means its artifact is taken as built on the inputs there now (never a wrong state) |
//! | `.automaton/lock` holder | rebuildable | names the running automaton; none survives a power cut |
//! | `logs/<phase>-<n>.prompt.md` | rebuildable | re-rendered when the phase runs again |
//! | `.automaton/.vram_cache.json`, `.automaton/.agent_model.json` | rebuildable | caches of a probe / of the last agent's report |
//! | `.automaton/.index` | rebuildable | the status index, a cache of what artifacts said |
//! | `.automaton-spare-<name>` | rebuildable | [`write_recycling`]'s spare: the previous content of `.state`, `.incomplete` or `logs/agent.pid`, kept for its inode |
//!
//! [`write_atomic`] is durable; [`write_rebuildable`] is not, unless `- **Durability**: full`
//! (config.md `## Storage`, or `AUTOMATON_DURABILITY=full`) turned [`set_full_durability`] on,
//! which restores the fsync of every write. New writers get the durable one by default.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, mpsc};

/// Whether a file written by [`write_atomic_with`] must survive a power cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Cannot be rebuilt: fsync the file and its folder before returning.
    Durable,
    /// Re-derived on the next run (a cache, `.state`, a rendered prompt): atomic rename only.
    Rebuildable,
}

static FULL_DURABILITY: AtomicBool = AtomicBool::new(false);

/// `- **Durability**: full`: fsync every write, rebuildable ones included.
pub fn set_full_durability(on: bool) {
    FULL_DURABILITY.store(on, Ordering::Relaxed);
}

/// Whether every write is fsynced (`Durability: full`).
pub fn full_durability() -> bool {
    FULL_DURABILITY.load(Ordering::Relaxed)
}

/// Write `bytes` to `path` atomically and durably, creating parent folders as needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, bytes, Durability::Durable)
}

/// Write a file that is re-derived when lost: atomically, without fsync (unless
/// `Durability: full`).
pub fn write_rebuildable(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, bytes, Durability::Rebuildable)
}

/// Write `bytes` to `path` atomically, creating parent folders as needed; fsync as `durability`
/// (and `Durability: full`) say. An error names the file (`cannot write <path>: <why>`) and
/// keeps the kind of the error underneath.
pub fn write_atomic_with(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    let sync = durability == Durability::Durable || full_durability();
    write_atomic_inner(path, bytes, sync)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

fn write_atomic_inner(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    let dir = folder_of(path);
    // Keep the mode of the file replaced; a new file is readable by all (0644), as a shell's
    // `>` would make it under the usual umask (tempfile alone would make it 0600).
    let mode = fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let temp = || {
        tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .permissions(fs::Permissions::from_mode(mode))
            .tempfile_in(dir)
    };
    // The folder usually exists: made only when the temp file cannot be.
    let mut tmp = match temp() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dir)?;
            temp()?
        }
        other => other?,
    };
    tmp.write_all(bytes)?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable; a failure here loses nothing already written.
    if sync && let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Replace `path` with `bytes` atomically, like [`write_atomic_with`], but without making or
/// freeing an inode once a spare exists: the bytes go into the spare kept beside `path`
/// (`.automaton-spare-<name>`), which is then exchanged with `path` (`renameat2`
/// `RENAME_EXCHANGE`), so the old content becomes the next spare. For the files a run rewrites
/// or removes on every phase (`.state`, `.incomplete`, `logs/agent.pid`): on ext4 without a
/// journal, every inode made scans all those freed in the last minute, which made a long run
/// quadratic. Where exchange is not supported, the spare is renamed onto `path`.
pub fn write_recycling(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    let sync = durability == Durability::Durable || full_durability();
    write_recycling_inner(path, bytes, sync)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

fn write_recycling_inner(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let spare = spare_of(path)?;
    // Not truncated on open: emptying a file that had blocks frees them (and ext4 then
    // flushes it at close); overwriting in place and cutting the tail frees nothing.
    let Ok(f) = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&spare)
    else {
        // Not a file of ours to reuse (a link, say): the plain atomic write.
        return write_atomic_inner(path, bytes, sync);
    };
    f.write_all_at(bytes, 0)?;
    if f.metadata()?.len() > bytes.len() as u64 {
        f.set_len(bytes.len() as u64)?;
    }
    if sync {
        f.sync_all()?;
    }
    drop(f);
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    match renameat_with(CWD, &spare, CWD, path, RenameFlags::EXCHANGE) {
        Ok(()) => {}
        // Nothing to exchange with, or no exchange here: a plain rename.
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
            fs::rename(&spare, path)?
        }
        Err(e) => return Err(e.into()),
    }
    if sync {
        let _ = fs::File::open(folder_of(path)).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// Remove `path` by making it the spare of [`write_recycling`] (no inode freed); a missing
/// file is fine.
pub fn remove_recycling(path: &Path) -> io::Result<()> {
    match fs::rename(path, spare_of(path)?) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
            e.kind(),
            format!("cannot remove {}: {e}", path.display()),
        )),
        _ => Ok(()),
    }
}

fn spare_of(path: &Path) -> io::Result<std::path::PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?;
    let mut spare = std::ffi::OsString::from(SPARE_PREFIX);
    spare.push(name);
    Ok(path.with_file_name(spare))
}

/// Make a file already written by rename durable (fsync it, then its folder, for the rename)
/// on a background thread, without waiting for the disk: for the runner's `.incomplete`,
/// requested as its agent starts (and the `subtasks/` folder a decomposition filled, and
/// `.state.frozen` when a freeze writes it). A short agent used to end before the fsync did,
/// and the next phase waited for the disk. The fsync
/// is normally done within milliseconds (when phases start faster than [`SYNC_INTERVAL`], the
/// fsyncs asked for meanwhile wait and are done at once, in one round), long before the
/// kernel writes back what the agent wrote (seconds); [`wait_background_syncs`] waits for all
/// of them (automaton calls it before it exits). Which file `path` names is noted now (device
/// and inode), and it is opened in its round; one that by then no longer stands at `path`
/// (removed, or replaced by a rename) is not synced: what it said is gone from the folder (a
/// marker whose phase ended, a `.state.frozen` replaced), and a replacement is as durable as
/// its writer made it. A failed fsync is a warning on stderr (only a power cut could then lose
/// the file). When the syncs cannot be handed over (no thread, or a full queue of
/// [`SYNC_QUEUE`] on a disk slower than the phases) the fsync runs here. Under full durability
/// the write itself was fsynced: no-op.
pub fn sync_in_background(path: &Path) -> io::Result<()> {
    if full_durability() {
        return Ok(());
    }
    let job = SyncJob::new(path)?;
    let syncer = SYNCER.get_or_init(|| {
        let (tx, rx) = mpsc::sync_channel::<SyncMsg>(SYNC_QUEUE);
        std::thread::Builder::new()
            .name("automaton-sync".into())
            .spawn(move || sync_loop(&rx, SYNC_INTERVAL))
            .ok()
            .map(|_| tx)
    });
    match syncer {
        Some(tx) => hand_over(tx, job),
        None => {
            sync_round(&[job]);
        }
    }
    Ok(())
}

/// Wait until every fsync requested from [`sync_in_background`] so far is done.
pub fn wait_background_syncs() {
    let Some(Some(tx)) = SYNCER.get() else {
        return;
    };
    let (reply, done) = mpsc::channel();
    if tx.send(SyncMsg::Done(reply)).is_ok() {
        let _ = done.recv();
    }
}

/// How many syncs may wait in the background thread's queue, and how many one round may
/// gather while it waits: at most twice this many are pending (a path each, no open file).
const SYNC_QUEUE: usize = 64;

/// The least time between two rounds of background syncs. Every fsync forces a journal
/// commit, which briefly holds up every change to the file system, the agents' included;
/// when phases start faster than this (short agents, `--jobs`), the syncs requested in the
/// meantime wait and are done at once ([`sync_round`]), so one commit carries them all
/// (group commit), and the markers of phases that ended meanwhile need none. A sync requested
/// after a quiet spell runs at once. 100 ms is still far less than the kernel takes to write
/// back what an agent wrote (seconds).
const SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// The background syncer: do each round of syncs in the order asked, at most one round per
/// `interval`; a [`SyncMsg::Done`] ends the wait (automaton is about to exit). Returns how
/// many rounds of syncs it ran, once every sender is gone.
fn sync_loop(rx: &mpsc::Receiver<SyncMsg>, interval: std::time::Duration) -> usize {
    use std::time::Instant;
    let mut rounds = 0;
    let mut last: Option<Instant> = None;
    while let Ok(first) = rx.recv() {
        let mut round = vec![first];
        let due = last.map(|t| t + interval);
        let mut waiting = matches!(round[0], SyncMsg::Sync(_));
        while waiting
            && round.len() < SYNC_QUEUE
            && let Some(left) = due.and_then(|d| d.checked_duration_since(Instant::now()))
        {
            match rx.recv_timeout(left) {
                Ok(msg) => {
                    waiting = matches!(msg, SyncMsg::Sync(_));
                    round.push(msg);
                }
                Err(_) => break,
            }
        }
        // A Done ends the wait, so it comes last: answered once every sync before it is done.
        let mut jobs = Vec::new();
        let mut replies = Vec::new();
        for msg in round {
            match msg {
                SyncMsg::Sync(job) => jobs.push(job),
                SyncMsg::Done(reply) => replies.push(reply),
            }
        }
        if !jobs.is_empty() {
            sync_round(&jobs);
            rounds += 1;
            last = Some(Instant::now());
        }
        for reply in replies {
            let _ = reply.send(());
        }
    }
    rounds
}

/// fsync every file `jobs` name that still stands at its path, then their folders, each once
/// (an fsync covers every write to its file before it, and a task's marker, its spare and its
/// folder recur). Within each step the fsyncs run at the same time ([`sync_all_at_once`]):
/// fsyncs that wait together are served by one journal commit, while one after the other each
/// would force its own, the agents' writes going on meanwhile. Files first, so that a folder's
/// fsync mostly finds its changes committed already. Returns how many it synced.
fn sync_round(jobs: &[SyncJob]) -> usize {
    let mut seen = std::collections::HashSet::new();
    let open: Vec<(fs::File, fs::File, &Path)> = jobs
        .iter()
        .filter_map(|j| {
            j.open_if_still_there()
                .map(|(f, d)| (f, d, j.path.as_path()))
        })
        .collect();
    let files = distinct(&mut seen, open.iter().map(|(f, _, p)| (f, *p)));
    let folders = distinct(&mut seen, open.iter().map(|(_, d, p)| (d, *p)));
    sync_all_at_once(&files);
    sync_all_at_once(&folders);
    files.len() + folders.len()
}

/// The open files (with the path a warning names) whose inode `seen` did not hold yet.
fn distinct<'a>(
    seen: &mut std::collections::HashSet<(u64, u64)>,
    targets: impl Iterator<Item = (&'a fs::File, &'a Path)>,
) -> Vec<(&'a fs::File, &'a Path)> {
    use std::os::unix::fs::MetadataExt;
    targets
        .filter(|(f, _)| {
            f.metadata()
                .map_or(true, |m| seen.insert((m.dev(), m.ino())))
        })
        .collect()
}

/// How many threads (the syncer's included) fsync one round's files at the same time: a few
/// already share a commit, and the threads count against the same process limit as the
/// agents' own.
const SYNC_THREADS: usize = 8;

/// fsync `targets` concurrently, each thread taking the next one in turn. A failure is a
/// warning naming the file (`writeln!`, which cannot panic on a closed stderr the way
/// `eprintln!` would).
fn sync_all_at_once(targets: &[(&fs::File, &Path)]) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        while let Some((f, path)) = targets.get(next.fetch_add(1, Ordering::Relaxed)) {
            if let Err(e) = f.sync_all() {
                warn_unsynced::<()>(path, &e);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..targets.len().min(SYNC_THREADS) {
            // No thread to be had: the others (this one at least) take its share.
            let _ = std::thread::Builder::new()
                .stack_size(64 * 1024) // an fsync and at most a warning
                .spawn_scoped(s, work);
        }
        work();
    });
}

/// The background syncer's queue (`None`: its thread could not be started).
static SYNCER: OnceLock<Option<mpsc::SyncSender<SyncMsg>>> = OnceLock::new();

enum SyncMsg {
    Sync(SyncJob),
    /// Answered once every message before it was handled.
    Done(mpsc::Sender<()>),
}

/// Queue `job`, or run it here when the queue is full or its thread gone.
fn hand_over(tx: &mpsc::SyncSender<SyncMsg>, job: SyncJob) {
    if let Err(
        mpsc::TrySendError::Full(SyncMsg::Sync(job))
        | mpsc::TrySendError::Disconnected(SyncMsg::Sync(job)),
    ) = tx.try_send(SyncMsg::Sync(job))
    {
        sync_round(&[job]);
    }
}

/// A file to sync for [`sync_in_background`]: its path and which file it was when asked
/// (device and inode). Opened only in its round, so pending syncs hold no descriptors.
struct SyncJob {
    path: std::path::PathBuf,
    id: (u64, u64),
}

impl SyncJob {
    fn new(path: &Path) -> io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot sync {}: {e}", path.display()))
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            id: (m.dev(), m.ino()),
        })
    }

    /// The file and its folder, opened, while `path` still names the file asked for; `None`
    /// when it was removed or replaced since (what it said is gone), or cannot be opened (a
    /// warning: a power cut could lose it).
    fn open_if_still_there(&self) -> Option<(fs::File, fs::File)> {
        use std::os::unix::fs::MetadataExt;
        let opened = fs::File::open(&self.path).and_then(|f| {
            let m = f.metadata()?;
            Ok(((m.dev(), m.ino()) == self.id).then_some(f))
        });
        let file = match opened {
            Ok(file) => file?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => return warn_unsynced(&self.path, &e),
        };
        match fs::File::open(folder_of(&self.path)) {
            Ok(dir) => Some((file, dir)),
            Err(e) => warn_unsynced(&self.path, &e),
        }
    }
}

/// Say on stderr that `path` could not be synced (`writeln!`, which cannot panic on a closed
/// stderr the way `eprintln!` would).
fn warn_unsynced<T>(path: &Path, e: &io::Error) -> Option<T> {
    let _ = writeln!(
        io::stderr(),
        "warning: cannot sync {}: {e} (a power cut could lose it)",
        path.display()
    );
    None
}

/// The folder a file is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Append `line` (no newline of its own) to a JSON-lines style file as one `write`, so a
/// crash leaves at most a torn last line; a torn line left by an earlier crash is closed first
/// (in the same write), so it stays a line of its own. Appending creates no inode and deletes
/// none, unlike a rewrite by rename. `Durable` fsyncs the file (and its folder when new).
pub fn append_line(path: &Path, line: &str, durability: Durability) -> io::Result<()> {
    append_line_unless(path, line, durability, |_| false).map(|_| ())
}

/// [`append_line`], unless the file's first two bytes (when it has two) make `refuse` say
/// so: `Ok(false)`, nothing written. For a reader that appends to one format and rewrites an
/// older one, without opening the file twice.
pub fn append_line_unless(
    path: &Path,
    line: &str,
    durability: Durability,
    refuse: impl FnOnce(&[u8; 2]) -> bool,
) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    let mut text = String::with_capacity(line.len() + 2);
    let len = f.metadata()?.len();
    let mut head = [0u8; 2];
    if len >= 2 && f.read_exact_at(&mut head, 0).is_ok() && refuse(&head) {
        return Ok(false);
    }
    if len > 0 {
        let mut last = [0u8; 1];
        f.read_exact_at(&mut last, len - 1)?;
        if last[0] != b'\n' {
            text.push('\n');
        }
    }
    text.push_str(line);
    text.push('\n');
    f.write_all(text.as_bytes())?;
    if durability == Durability::Durable || full_durability() {
        f.sync_all()?;
        if len == 0
            && let Some(dir) = path.parent()
            && let Ok(d) = fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
    }
    Ok(true)
}

/// Write a new file atomically, never replacing one: `Ok(false)` (and nothing written) when
/// `path` already exists, even if it appeared while this was writing.
pub fn create_atomic(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    if fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let dir = folder_of(path);
    fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {}
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e.error),
    }
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(true)
}

/// Open an input file for reading, refusing anything but a regular file: a FIFO put in place
/// of an input would block `open(2)` (and every command, `status` included) until a writer
/// came, and a device could be read forever. The open is non-blocking, the type is checked on
/// the descriptor (no race with a swap of the path), then blocking reads are restored.
pub fn open_regular(path: impl AsRef<Path>) -> io::Result<fs::File> {
    let (file, _) = open_checked(path.as_ref())?;
    rustix::fs::fcntl_setfl(&file, rustix::fs::OFlags::empty())?;
    Ok(file)
}

/// [`open_regular`] without restoring blocking reads (a regular file ignores `O_NONBLOCK`),
/// and the file's size from the same stat.
fn open_checked(path: &Path) -> io::Result<(fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok((file, meta.len()))
}

/// Read `file` (of `size` bytes as stat'ed) to its end or to `limit` bytes, whichever comes
/// first. The buffer starts one byte over the size, so a file that did not grow is read in one
/// call, and at 1 KiB, so a procfs file (size 0) is too.
fn read_up_to(file: &mut fs::File, size: u64, limit: usize) -> io::Result<Vec<u8>> {
    let first = usize::try_from(size)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    let mut buf = vec![0u8; first.max(1024).min(limit)];
    let mut filled = 0;
    while filled < limit {
        if filled == buf.len() {
            buf.resize(buf.len().saturating_mul(2).min(limit), 0);
        }
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// `std::fs::read`, for regular files only (see [`open_regular`]), in as few system calls as
/// a file allows: open, one stat (the type check, which also sizes the buffer), the reads,
/// close.
pub fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let (mut file, size) = open_checked(path.as_ref())?;
    read_up_to(&mut file, size, usize::MAX)
}

/// `std::fs::read_to_string`, for regular files only ([`open_regular`]).
pub fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Whether a name is one of [`write_atomic`]'s temporary files (left behind by a crash between
/// creating and renaming it) or a spare of [`write_recycling`]: such a file never counts as
/// content of a folder.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) || name.starts_with(SPARE_PREFIX)
}

/// The prefix of [`write_atomic`]'s temporary files.
pub const TEMP_PREFIX: &str = ".automaton-tmp-";
/// The prefix of [`write_recycling`]'s spares.
pub const SPARE_PREFIX: &str = ".automaton-spare-";

/// Read at most `limit` bytes of a file. Returns the bytes and whether the file was longer.
pub fn read_prefix(path: &Path, limit: usize) -> io::Result<(Vec<u8>, bool)> {
    let (mut file, size) = open_checked(path)?;
    let mut buf = read_up_to(&mut file, size, limit.saturating_add(1))?;
    let truncated = buf.len() > limit;
    buf.truncate(limit);
    Ok((buf, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Markers written and removed faster than the syncer's rounds (as short phases do): the
    /// syncs are queued or run in place, and waiting for them returns once they are done; a
    /// missing file is an error at once, naming it.
    #[test]
    fn background_sync_waits_and_names_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..3 * SYNC_QUEUE {
            let p = dir.path().join(".incomplete");
            write_recycling(&p, format!("n{i}\n").as_bytes(), Durability::Rebuildable).unwrap();
            sync_in_background(&p).unwrap();
            remove_recycling(&p).unwrap();
        }
        wait_background_syncs();
        let missing = dir.path().join("gone");
        let e = sync_in_background(&missing).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(
            e.to_string().contains(&missing.display().to_string()),
            "{e}"
        );
    }

    /// Run a syncer with a 30 s interval (so a burst cannot straddle two rounds by the clock):
    /// one sync and a `Done`, then `burst` syncs and a `Done`. Returns the rounds it ran and how
    /// long the second `Done` took to be answered.
    fn rounds_for_a_burst(burst: usize) -> (usize, std::time::Duration) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, "x").unwrap();
        let (tx, rx) = mpsc::sync_channel::<SyncMsg>(SYNC_QUEUE);
        let syncer = std::thread::spawn(move || sync_loop(&rx, std::time::Duration::from_secs(30)));
        let sync_then_done = |n: usize| {
            for _ in 0..n {
                tx.send(SyncMsg::Sync(SyncJob::new(&p).unwrap())).unwrap();
            }
            let (reply, done) = mpsc::channel();
            tx.send(SyncMsg::Done(reply)).unwrap();
            done.recv().unwrap();
        };
        sync_then_done(1); // the first round: at once, nothing came before it
        let started = std::time::Instant::now();
        sync_then_done(burst);
        let waited = started.elapsed();
        drop(tx);
        (syncer.join().unwrap(), waited)
    }

    /// Syncs asked for within the interval after a round wait and are done together, in one
    /// round; a `Done` ends the wait.
    #[test]
    fn syncs_asked_for_together_are_done_in_one_round() {
        let (rounds, waited) = rounds_for_a_burst(10);
        assert!(
            waited < std::time::Duration::from_secs(20),
            "the Done did not end the wait"
        );
        assert_eq!(rounds, 2, "ten syncs and a Done: one round");
    }

    /// A round gathers at most a queue's worth of syncs: the next ones make the next round.
    #[test]
    fn a_round_stops_gathering_at_a_queue_s_worth() {
        let (rounds, _) = rounds_for_a_burst(SYNC_QUEUE + 1);
        assert_eq!(rounds, 3, "1, then {SYNC_QUEUE}, then 1 and the Done");
    }

    /// A round syncs each file and folder once, however many jobs name it.
    #[test]
    fn a_round_syncs_each_file_and_folder_once() {
        let dir = tempfile::tempdir().unwrap();
        let (f, g) = (dir.path().join("f"), dir.path().join("g"));
        fs::write(&f, "x").unwrap();
        fs::write(&g, "y").unwrap();
        let mut jobs: Vec<SyncJob> = (0..10).map(|_| SyncJob::new(&f).unwrap()).collect();
        jobs.extend((0..3).map(|_| SyncJob::new(&g).unwrap()));
        assert_eq!(sync_round(&jobs), 3, "f, g and their folder");
        assert_eq!(sync_round(&[]), 0);
    }

    /// A file removed or replaced before its round is not synced: it no longer says anything.
    #[test]
    fn a_round_skips_files_no_longer_at_their_path() {
        let dir = tempfile::tempdir().unwrap();
        let (f, g, h) = (
            dir.path().join("f"),
            dir.path().join("g"),
            dir.path().join("h"),
        );
        for p in [&f, &g, &h] {
            fs::write(p, "x").unwrap();
        }
        let jobs = [&f, &g, &h].map(|p| SyncJob::new(p).unwrap());
        fs::remove_file(&f).unwrap();
        write_rebuildable(&g, b"later").unwrap();
        assert_eq!(sync_round(&jobs), 2, "h and its folder");
        fs::remove_file(&h).unwrap();
        assert_eq!(sync_round(&jobs), 0);
    }

    /// The runner's marker: a sync asked for as a phase starts is skipped once the phase
    /// removed the marker, and done when the next phase put the recycled inode back (with
    /// its own content); a folder (`subtasks/`) is synced with the folder it is in.
    #[test]
    fn a_round_follows_the_recycled_marker_and_syncs_folders() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join(".incomplete");
        let write = |text: &str| write_recycling(&marker, text.as_bytes(), Durability::Rebuildable);
        write("SPEC.md\n").unwrap();
        let job = [SyncJob::new(&marker).unwrap()];
        remove_recycling(&marker).unwrap(); // the marker becomes the spare
        assert_eq!(sync_round(&job), 0, "the phase ended: nothing to sync");
        write("DESIGN.md\n").unwrap(); // the spare, written, becomes the marker again
        assert_eq!(
            sync_round(&job),
            2,
            "the next phase's marker and its folder"
        );
        write("TEST_PLAN.md\n").unwrap(); // exchanged with a new spare
        assert_eq!(sync_round(&job), 0, "replaced");
        let sub = dir.path().join("subtasks");
        fs::create_dir(&sub).unwrap();
        assert_eq!(sync_round(&[SyncJob::new(&sub).unwrap()]), 2);
    }

    /// A full queue or a gone thread does not lose a sync: it runs in the caller instead of
    /// being queued.
    #[test]
    fn a_sync_that_cannot_be_queued_runs_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, "x").unwrap();
        let (tx, rx) = mpsc::sync_channel::<SyncMsg>(1);
        hand_over(&tx, SyncJob::new(&p).unwrap());
        hand_over(&tx, SyncJob::new(&p).unwrap()); // full: run here
        assert!(matches!(rx.try_recv(), Ok(SyncMsg::Sync(_))));
        assert!(rx.try_recv().is_err(), "only the first was queued");
        drop(rx);
        hand_over(&tx, SyncJob::new(&p).unwrap()); // no thread: run here
    }

    /// A file rewritten and removed once per phase keeps the same two inodes: the content
    /// moves by exchange with its spare, removal makes it the spare, and a link in the
    /// spare's place is never written through.
    #[test]
    fn recycling_writes_reuse_two_inodes_and_never_follow_a_link() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".state");
        let spare = dir.path().join(".automaton-spare-.state");
        let inodes = || -> std::collections::BTreeSet<u64> {
            [&p, &spare]
                .iter()
                .filter_map(|f| fs::metadata(f).ok())
                .map(|m| m.ino())
                .collect()
        };
        write_recycling(&p, b"one\n", Durability::Rebuildable).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one\n");
        write_recycling(&p, b"two\n", Durability::Durable).unwrap();
        let pair = inodes();
        assert_eq!(pair.len(), 2);
        assert_eq!(fs::read(&p).unwrap(), b"two\n");
        assert_eq!(
            fs::read(&spare).unwrap(),
            b"one\n",
            "the old content is the spare"
        );
        write_recycling(&p, b"three\n", Durability::Rebuildable).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"three\n");
        assert_eq!(inodes(), pair, "no inode made or freed");
        remove_recycling(&p).unwrap();
        assert!(!p.exists());
        remove_recycling(&p).unwrap();
        write_recycling(&p, b"four\n", Durability::Rebuildable).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"four\n");
        assert!(inodes().is_subset(&pair));
        assert!(is_temp_name(".automaton-spare-.state"));

        let outside = dir.path().join("outside");
        fs::write(&outside, "keep").unwrap();
        let _ = fs::remove_file(&spare);
        std::os::unix::fs::symlink(&outside, &spare).unwrap();
        write_recycling(&p, b"five\n", Durability::Rebuildable).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"five\n");
        assert_eq!(
            fs::read(&outside).unwrap(),
            b"keep",
            "never written through a link"
        );
    }

    #[test]
    fn new_files_are_0644_and_replaced_files_keep_their_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.txt");
        write_atomic(&p, b"one").unwrap();
        // umask can only be read by swapping it; it is put back at once.
        let umask = rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o022));
        rustix::process::umask(umask);
        let expected = 0o644 & !umask.bits();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            expected
        );
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let (bytes, cut) = read_prefix(&p, 2).unwrap();
        assert_eq!((bytes.as_slice(), cut), (&b"tw"[..], true));
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &p, rustix::fs::Mode::from_raw_mode(0o644)).unwrap();
        let e = read(&p).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(read_prefix(&p, 10).is_err());
        fs::write(dir.path().join("f"), "x").unwrap();
        assert_eq!(read_to_string(dir.path().join("f")).unwrap(), "x");
    }

    #[test]
    fn read_returns_every_byte_of_empty_small_and_large_files() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 1, 4095, 4096, 70_000] {
            let p = dir.path().join(format!("f{len}"));
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            fs::write(&p, &bytes).unwrap();
            assert_eq!(read(&p).unwrap(), bytes, "{len} bytes");
        }
        // A folder that does not exist yet is made by the write that needs it.
        let deep = dir.path().join("a/b/c.txt");
        write_rebuildable(&deep, b"deep").unwrap();
        assert_eq!(read(&deep).unwrap(), b"deep");
    }

    #[test]
    fn a_failed_write_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("plain"), "a file, not a folder").unwrap();
        let p = dir.path().join("plain/x.md");
        let e = write_atomic(&p, b"x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("cannot write {}: ", p.display())),
            "{e}"
        );
    }

    #[test]
    fn create_atomic_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x/new.md");
        assert!(create_atomic(&p, b"one").unwrap());
        assert!(!create_atomic(&p, b"two").unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"one");
        assert_eq!(fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn rebuildable_writes_are_atomic_replacements_too() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c/.state");
        write_rebuildable(&p, b"new\n").unwrap();
        write_atomic_with(&p, b"design\n", Durability::Rebuildable).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"design\n");
        // Replaced by rename: no temp file is left beside it, and the inode changed.
        let ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&p).unwrap());
        write_rebuildable(&p, b"implement\n").unwrap();
        assert_ne!(
            ino,
            std::os::unix::fs::MetadataExt::ino(&fs::metadata(&p).unwrap())
        );
        let names: Vec<_> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(".state")]);
    }
}
