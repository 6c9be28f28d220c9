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
//! Durable: `TASK.md`, `.origin`, `.stop`, `logs/verified`, `.isolation` and git
//! `info/exclude`, `.state.frozen`, `.incomplete` (written before the agent starts and
//! synced while it starts, so a half-written artifact is always set aside) and a task folder's
//! own entry (a decomposition's sub-task folders with one fsync of `subtasks/`, [`sync_path`]). Rebuildable: `.state`,
//! `.state.inputs`, `PARENT_SPEC.md`, `VRAM_CONFIG.md`, prompts, caches, the lock's holder and
//! `logs/agent.pid` (durable for `slurm`: a job outlives this machine). Each file's reason is
//! in README.md's table under "Task folders".
//!
//! [`write_atomic`] is durable; [`write_rebuildable`] is not, unless `- **Durability**: full`
//! (config.md `## Storage`, or `AUTOMATON_DURABILITY=full`) turned [`set_full_durability`] on,
//! which restores the fsync of every write. New writers get the durable one by default.
//!
//! # Containment: automaton writes only inside the project
//!
//! Once [`contain_within`] named the project (settings do it when they load), every write
//! here beneath it checks the folders on its way: a folder that is a link resolving outside
//! the project (`tasks/`, a task folder, `logs/`, `subtasks/`, `.automaton/` pointing
//! elsewhere) is refused with its path, unless `- **Allow links out**: yes`. A link that
//! stays inside is fine. A file appended to ([`append_line`], [`open_append`]) is opened with
//! `O_NOFOLLOW` (by `openat2` beneath the project where the kernel has it): appending through
//! a link would write wherever it points, so a link there is refused always. A rewrite by
//! rename replaces a link itself and never writes through it.

use rustix::fd::OwnedFd;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a file written by [`write_atomic_with`] must survive a power cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Cannot be rebuilt: fsync the file and its folder before returning.
    Durable,
    /// Re-derived on the next run (a cache, `.state`, a rendered prompt): atomic rename only.
    Rebuildable,
    /// Made durable by the caller, later, with [`sync_renamed`] (the `.incomplete` marker,
    /// synced while its agent starts): atomic rename only for now.
    SyncedLater,
}

static FULL_DURABILITY: AtomicBool = AtomicBool::new(false);

/// The project automaton's writes stay in ([`contain_within`]).
struct Containment {
    /// The project folder as the paths written name it.
    root: PathBuf,
    /// The same, links resolved: where a resolved folder must lie.
    real: PathBuf,
    /// The project folder, open: the kernel resolves a path beneath it and refuses, in that
    /// same step, one that a link leads out of (`openat2(RESOLVE_BENEATH)`). `None` where the
    /// folder cannot be opened.
    folder: Option<fs::File>,
    allow_links_out: bool,
}

static CONTAINMENT: RwLock<Option<Containment>> = RwLock::new(None);

/// Keep every later write beneath `project` inside it (see the module's "Containment"):
/// with `allow_links_out` false, a folder beneath it that is a link resolving outside is
/// refused. Set once per command, when its settings load.
pub fn contain_within(project: &Path, allow_links_out: bool) {
    let c = Containment::new(project, allow_links_out);
    *CONTAINMENT.write().unwrap_or_else(|e| e.into_inner()) = Some(c);
}

/// Refuse `path` (a folder automaton is about to write in, or make) when it, or a folder
/// above it beneath the project, is a link that resolves outside the project. The error
/// names the link, where it points and the setting that allows it. A path outside the
/// project, or before [`contain_within`], passes: it is not the project's.
pub fn beneath(path: &Path) -> io::Result<()> {
    let guard = CONTAINMENT.read().unwrap_or_else(|e| e.into_inner());
    match guard.as_ref() {
        Some(c) => c.check(path),
        None => Ok(()),
    }
}

impl Containment {
    fn new(project: &Path, allow_links_out: bool) -> Containment {
        let real = fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
        Containment {
            root: project.to_path_buf(),
            folder: fs::File::open(&real).ok(),
            real,
            allow_links_out,
        }
    }

    /// [`beneath`] against this project.
    fn check(&self, path: &Path) -> io::Result<()> {
        if self.allow_links_out {
            return Ok(());
        }
        let Ok(rest) = path.strip_prefix(&self.root) else {
            return Ok(());
        };
        // Usually one call: the kernel resolves the whole path beneath the project, links
        // that stay inside included. Looked at folder by folder only where that fails: to
        // name the link that leads out, for a path not made yet, for a link with an absolute
        // target (which `RESOLVE_BENEATH` refuses even when it stays inside), or without
        // `openat2`.
        if self.open_beneath(rest, rustix::fs::OFlags::PATH).is_ok() {
            return Ok(());
        }
        let c = self;
        let mut at = c.root.clone();
        for part in rest.components() {
            at.push(part);
            match fs::symlink_metadata(&at) {
                // Not there yet: the write makes it, a real folder beneath the last one checked.
                Err(_) => break,
                Ok(m) if m.file_type().is_symlink() => {
                    let target = fs::canonicalize(&at).unwrap_or_else(|_| {
                        fs::read_link(&at).unwrap_or_else(|_| PathBuf::from("?"))
                    });
                    if !target.starts_with(&c.real) {
                        return Err(link_out(&at, &target, &c.root));
                    }
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }

    /// `openat2(rest, flags | O_CLOEXEC, RESOLVE_BENEATH)` from the project folder.
    fn open_beneath(&self, rest: &Path, flags: rustix::fs::OFlags) -> rustix::io::Result<OwnedFd> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let folder = self.folder.as_ref().ok_or(rustix::io::Errno::NOENT)?;
        // openat2 takes a mode only with O_CREAT.
        let mode = Mode::from_raw_mode(if flags.contains(OFlags::CREATE) {
            0o666
        } else {
            0
        });
        rustix::fs::openat2(
            folder,
            rest,
            flags | OFlags::CLOEXEC,
            mode,
            ResolveFlags::BENEATH,
        )
    }
}

fn link_out(link: &Path, target: &Path, root: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} is a link to {}, outside the project {}: automaton writes only inside the \
             project (`- **Allow links out**: yes` in config.md's `## Storage` allows it)",
            link.display(),
            target.display(),
            root.display()
        ),
    )
}

/// Open `path` to append to it, creating it (and its folder) when missing: beneath the
/// project ([`beneath`]) and never through a link (`O_NOFOLLOW`; a link there is refused with
/// its path). Every file automaton appends to is opened here or by [`append_line`].
pub fn open_append(path: &Path) -> io::Result<fs::File> {
    open_append_with(path, false, true)
}

/// [`open_append`]; `read` opens it for reading too, `make_dir` makes a missing folder.
fn open_append_with(path: &Path, read: bool, make_dir: bool) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = folder_of(path);
    let open = || match append_beneath(path, read) {
        Some(opened) => opened,
        None => {
            beneath(dir)?;
            fs::OpenOptions::new()
                .create(true)
                .read(read)
                .append(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
        }
    };
    let file = match open() {
        Err(e) if make_dir && e.kind() == io::ErrorKind::NotFound => {
            beneath(dir)?;
            fs::create_dir_all(dir)?;
            open()
        }
        other => other,
    };
    file.map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            appended_link(path)
        } else {
            e
        }
    })
}

/// Open a file to append to, beneath the project, in one step with the check ([`beneath`]):
/// a folder on the way swapped for a link that leads out fails the open itself, and the file
/// itself is never a link (`O_NOFOLLOW`). `None` where this does not apply (no project set,
/// links out allowed, a path outside it) or did not work (a link with an absolute target, or
/// no `openat2`: before Linux 5.6, or a seccomp filter): the caller checks with [`beneath`]
/// and opens with `O_NOFOLLOW` instead, which also names a link that leads out.
fn append_beneath(path: &Path, read: bool) -> Option<io::Result<fs::File>> {
    use rustix::fs::OFlags;
    let guard = CONTAINMENT.read().unwrap_or_else(|e| e.into_inner());
    let c = guard.as_ref().filter(|c| !c.allow_links_out)?;
    let rest = path.strip_prefix(&c.root).ok()?;
    let access = if read { OFlags::RDWR } else { OFlags::WRONLY };
    let flags = access | OFlags::CREATE | OFlags::APPEND | OFlags::NOFOLLOW;
    match c.open_beneath(rest, flags) {
        Ok(fd) => Some(Ok(fs::File::from(fd))),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM | rustix::io::Errno::XDEV) => None,
        Err(e) => Some(Err(e.into())),
    }
}

/// Refuse a file automaton appends to when it is a link, before anything is written (a run
/// checks its task's appended files so; the append itself refuses one made later).
pub fn refuse_appended_link(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(appended_link(path)),
        _ => Ok(()),
    }
}

fn appended_link(path: &Path) -> io::Error {
    let to = fs::read_link(path).map_or_else(|_| "?".into(), |t| t.display().to_string());
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} is a link (to {to}): automaton does not append through a link, which could \
             write anywhere; replace it with a plain file",
            path.display()
        ),
    )
}

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
    beneath(dir)?;
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

/// Make a file (or folder) that is already in place durable: fsync it, then the folder it is
/// in, so its own entry survives too. For the `subtasks/` folder a decomposition filled: one
/// fsync for all the sub-task folders made in it.
pub fn sync_path(path: &Path) -> io::Result<()> {
    let named =
        |e: io::Error| io::Error::new(e.kind(), format!("cannot sync {}: {e}", path.display()));
    fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(named)?;
    fs::File::open(folder_of(path))
        .and_then(|d| d.sync_all())
        .map_err(named)
}

/// Make a file just put in place by [`write_atomic_with`]`(…, SyncedLater)` durable with one
/// fsync of the file: on Linux's journaling file systems (ext4, xfs, btrfs) that fsync also
/// commits the rename that put it there, which came first. Under `Durability: full` the
/// folder is fsynced too, as POSIX alone would ask.
pub fn sync_renamed(path: &Path) -> io::Result<()> {
    if full_durability() {
        return sync_path(path);
    }
    fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| io::Error::new(e.kind(), format!("cannot sync {}: {e}", path.display())))
}

/// Remove a file; one already gone is fine. An error names the file.
pub fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
            e.kind(),
            format!("cannot remove {}: {e}", path.display()),
        )),
        _ => Ok(()),
    }
}

/// FNV-1a, 64 bit, in hex: enough to tell whether a file was rewritten since it was hashed.
pub fn content_hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
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
    let mut f = open_append_with(path, true, false)?;
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
    beneath(dir)?;
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
    let mut buf = Vec::with_capacity(first.max(1024).min(limit));
    file.take(u64::try_from(limit).unwrap_or(u64::MAX))
        .read_to_end(&mut buf)?;
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
/// creating and renaming it) or a spare file of an older automaton ([`OLD_SPARE_PREFIX`]):
/// such a file never counts as content of a folder.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) || name.starts_with(OLD_SPARE_PREFIX)
}

/// The prefix of [`write_atomic`]'s temporary files.
pub const TEMP_PREFIX: &str = ".automaton-tmp-";
/// The prefix of the spare files older versions kept beside `.state`, `.incomplete` and
/// `logs/agent.pid` (to reuse their inodes). Never written now; recovery deletes them.
pub const OLD_SPARE_PREFIX: &str = ".automaton-spare-";

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
    fn sync_path_syncs_a_folder_and_names_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("subtasks");
        fs::create_dir(&sub).unwrap();
        sync_path(&sub).unwrap();
        let missing = dir.path().join("gone");
        let e = sync_path(&missing).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(
            e.to_string().contains(&missing.display().to_string()),
            "{e}"
        );
        remove_if_there(&missing).unwrap();
        assert!(is_temp_name(".automaton-spare-.state"));
    }

    #[test]
    fn only_links_resolving_outside_the_project_are_refused() {
        use std::os::unix::fs::symlink;
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = project.path();
        fs::create_dir_all(root.join("tasks/real/logs")).unwrap();
        fs::create_dir_all(root.join("elsewhere")).unwrap();
        symlink(outside.path(), root.join("tasks/out")).unwrap();
        symlink("../elsewhere", root.join("tasks/in")).unwrap();
        // A link inside that points to a link out is out.
        symlink("out", root.join("tasks/via")).unwrap();
        let c = Containment::new(root, false);
        for ok in [
            "tasks/real/logs",
            "tasks/real/logs/new/deeper",
            "tasks/in/logs",
            "nothing",
        ] {
            c.check(&root.join(ok))
                .unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for (out, link) in [
            ("tasks/out/logs", "tasks/out"),
            ("tasks/via/x", "tasks/via"),
        ] {
            let e = c.check(&root.join(out)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
            let want = format!("{} is a link to ", root.join(link).display());
            assert!(e.to_string().starts_with(&want), "{e}");
        }
        // Outside the project is not the project's business; allowed links out pass.
        c.check(outside.path()).unwrap();
        Containment::new(root, true)
            .check(&root.join("tasks/out/logs"))
            .unwrap();
    }

    #[test]
    fn appends_never_go_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep\n").unwrap();
        let link = dir.path().join("logs/journal.jsonl");
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for e in [
            append_line(&link, "x", Durability::Rebuildable).unwrap_err(),
            open_append(&link).unwrap_err(),
            refuse_appended_link(&link).unwrap_err(),
        ] {
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
            assert!(
                e.to_string()
                    .starts_with(&format!("{} is a link (to ", link.display())),
                "{e}"
            );
        }
        assert_eq!(fs::read(&victim).unwrap(), b"keep\n");
        // A plain file, and a missing one in a missing folder, are appended to.
        let plain = dir.path().join("new/agent.log");
        open_append(&plain).unwrap();
        append_line(&plain, "one", Durability::Rebuildable).unwrap();
        assert_eq!(fs::read(&plain).unwrap(), b"one\n");
        refuse_appended_link(&plain).unwrap();
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
