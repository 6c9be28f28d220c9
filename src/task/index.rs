//! `.automaton/.index`: what each file of a task folder said the last time it was read, keyed
//! by its (size, mtime, ctime, inode), so that a repeated `status` (or `graph`, or a no-op
//! `orchestrate`) on a large tree stats the files instead of opening them.
//!
//! It is a cache and nothing but one:
//! - a missing, unreadable, truncated or corrupted index (a checksum covers the whole body) is
//!   ignored, and the tree is read as if there were none;
//! - an entry is used only when the file's size, mtime (ns), ctime (ns) and inode are all those
//!   recorded; a rewrite in place changes the ctime even when `touch` puts the mtime back;
//! - the racy-clean rule (as git's): a file whose mtime or ctime lies within [`RACY_NS`] of the
//!   moment the index is written is not recorded (nor trusted when read back), because a second
//!   write within the clock's granularity could leave every key as it was;
//! - what is recorded is what was read (a "has content" probe, or the bytes of the small files
//!   that are parsed: VERDICT.md, DECOMPOSITION.md, `.state`, `.origin`, `.stop`), never a
//!   parse, so a newer parser never sees an older one's answer;
//! - it is written atomically and best effort (a read-only project still gets its `status`),
//!   without the project lock: two writers each leave a valid index, the last one wins;
//! - it is written only for trees of [`MIN_TASKS`] tasks or more (or where one already exists):
//!   below that a walk takes a few milliseconds and `status` leaves the project untouched.
//!
//! Format (little-endian): the magic, the body's length, a checksum of what follows, the write
//! time (ns since the epoch), then one record per task: `u16` length + relative path, `u8` count, and per
//! file: `u8` file id, size (a varint: LEB128), `i64` mtime ns, ctime ns less mtime ns (a
//! zigzag varint: they are most often equal or close), inode (a varint), then a kind byte: a
//! probe's flags (bit 0 has content, bit 1 valid UTF-8), or `4` followed by a varint length
//! and the bytes. (Varints keep the index, which a walk holds whole, about half as large.)

use crate::state::Artifact;
use std::io;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where the index lives, relative to the project.
pub const INDEX_FILE: &str = ".automaton/.index";
/// Trees smaller than this get no index written.
pub const MIN_TASKS: usize = 256;
/// Files changed this close to the index's write time are not trusted (ns).
pub const RACY_NS: i64 = 2_000_000_000;
/// Larger files' bytes are not kept (they are read each time).
const MAX_KEPT_BYTES: usize = 16 * 1024;
const MAGIC: &[u8; 8] = b"AMIDX\x00\x00\x02";
const HEADER: usize = 8 + 8 + 8 + 8;

/// The files an index records, by id: the artifacts in [`Artifact::ALL`] order, then the
/// control files.
pub const STATE_ID: u8 = 9;
pub const ORIGIN_ID: u8 = 10;
pub const STOP_ID: u8 = 11;

pub fn artifact_id(a: Artifact) -> u8 {
    Artifact::ALL.iter().position(|x| *x == a).unwrap_or(0) as u8
}

/// What identifies one version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatKey {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
}

impl StatKey {
    pub fn of(m: &std::fs::Metadata) -> StatKey {
        StatKey {
            size: m.size(),
            mtime_ns: m.mtime().saturating_mul(1_000_000_000) + m.mtime_nsec(),
            ctime_ns: m.ctime().saturating_mul(1_000_000_000) + m.ctime_nsec(),
            ino: m.ino(),
        }
    }

    /// The key of a `stat` result (the same fields as [`StatKey::of`]). The field types of
    /// `struct stat` differ between targets, hence the casts.
    #[allow(clippy::unnecessary_cast)]
    pub fn of_stat(st: &rustix::fs::Stat) -> StatKey {
        StatKey {
            size: st.st_size as u64,
            mtime_ns: (st.st_mtime as i64).saturating_mul(1_000_000_000) + st.st_mtime_nsec as i64,
            ctime_ns: (st.st_ctime as i64).saturating_mul(1_000_000_000) + st.st_ctime_nsec as i64,
            ino: st.st_ino as u64,
        }
    }

    /// Whether the file changed too close to `time` for its key to be trusted.
    fn racy(&self, time: i64) -> bool {
        self.mtime_ns >= time.saturating_sub(RACY_NS)
            || self.ctime_ns >= time.saturating_sub(RACY_NS)
    }
}

/// What a file said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Facts<B> {
    /// A probe: whether it holds anything but whitespace, and whether its start is UTF-8.
    Probe { content: bool, utf8_ok: bool },
    /// Its bytes (small files that are parsed), and whether the read was cut short.
    Bytes(B),
}

/// A loaded index: its body, and the records sorted by the hash of their task path.
pub struct Index {
    body: Vec<u8>,
    written_ns: i64,
    slots: Vec<(u64, u32)>,
    entries: usize,
}

fn path_hash(rel: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in rel.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A fast checksum of the body, eight bytes at a time.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        h = (h ^ w).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
    }
    for b in chunks.remainder() {
        h = (h ^ u64::from(*b)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    }
    h ^ (h >> 31)
}

/// The kind byte of an entry that keeps bytes (0 to 3 are a probe's flags).
const BYTES_KIND: u8 = 4;

/// Append `v` as a LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A signed number as an unsigned one that stays small when it is near zero.
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A bounds-checked reader over the body.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .and_then(|s| s.try_into().ok())
            .map(u64::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.u64().map(|v| v as i64)
    }
    /// A LEB128 varint (at most ten bytes).
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// One file entry.
    fn entry(&mut self) -> Option<(u8, StatKey, Facts<&'a [u8]>)> {
        let id = self.u8()?;
        let size = self.varint()?;
        let mtime_ns = self.i64()?;
        let delta = self.varint()?;
        let key = StatKey {
            size,
            mtime_ns,
            ctime_ns: mtime_ns.wrapping_add(unzigzag(delta)),
            ino: self.varint()?,
        };
        let facts = match self.u8()? {
            f @ 0..=3 => Facts::Probe {
                content: f & 1 != 0,
                utf8_ok: f & 2 != 0,
            },
            BYTES_KIND => {
                let n = usize::try_from(self.varint()?).ok()?;
                Facts::Bytes(self.take(n)?)
            }
            _ => return None,
        };
        (id <= STOP_ID).then_some((id, key, facts))
    }

    /// One task record: its path and the offset of its first entry, and its entry count.
    fn record(&mut self) -> Option<(&'a str, usize, u8)> {
        let n = self.u16()? as usize;
        let rel = std::str::from_utf8(self.take(n)?).ok()?;
        let count = self.u8()?;
        let start = self.at;
        for _ in 0..count {
            self.entry()?;
        }
        Some((rel, start, count))
    }
}

impl Index {
    /// The project's index, if there is a sound one.
    pub fn load(project: &Path) -> Option<Index> {
        let bytes = std::fs::read(project.join(INDEX_FILE)).ok()?;
        Index::parse(bytes)
    }

    fn parse(mut bytes: Vec<u8>) -> Option<Index> {
        let mut c = Cursor { b: &bytes, at: 0 };
        if c.take(8)? != MAGIC {
            return None;
        }
        let len = c.u64()? as usize;
        let sum = c.u64()?;
        let written_ns = c.i64()?;
        // The checksum covers the write time and the body.
        if bytes.len() != HEADER.checked_add(len)? || checksum(&bytes[HEADER - 8..]) != sum {
            return None;
        }
        bytes.drain(..HEADER);
        let mut c = Cursor { b: &bytes, at: 0 };
        let mut slots = Vec::new();
        let mut entries = 0;
        while c.at < bytes.len() {
            let at = c.at as u32;
            let (rel, _, count) = c.record()?;
            slots.push((path_hash(rel), at));
            entries += usize::from(count);
        }
        slots.sort_unstable();
        Some(Index {
            body: bytes,
            written_ns,
            slots,
            entries,
        })
    }

    /// Entries recorded (every file of every task).
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// The recorded entries of one task, if any, and where its record lies in the body.
    #[allow(clippy::type_complexity)]
    fn task(&self, rel: &str) -> (Vec<(u8, StatKey, Facts<&[u8]>)>, Option<Range<usize>>) {
        let h = path_hash(rel);
        let first = self.slots.partition_point(|(k, _)| *k < h);
        for (k, at) in &self.slots[first..] {
            if *k != h {
                break;
            }
            let mut c = Cursor {
                b: &self.body,
                at: *at as usize,
            };
            if let Some((r, start, count)) = c.record()
                && r == rel
            {
                let record = *at as usize..c.at;
                let mut c = Cursor {
                    b: &self.body,
                    at: start,
                };
                return ((0..count).filter_map(|_| c.entry()).collect(), Some(record));
            }
        }
        (Vec::new(), None)
    }
}

/// The records of the next index, in walk order: the bytes of new ones, and runs of old ones
/// kept as they were, by their place in the old index's body (not copied: a walk that changes
/// nothing builds no second index in memory).
#[derive(Default)]
pub struct Records(Vec<Run>);

enum Run {
    New(Vec<u8>),
    Old(Range<usize>),
}

impl Records {
    fn push(&mut self, run: Run) {
        match (self.0.last_mut(), run) {
            (Some(Run::New(a)), Run::New(b)) => a.extend_from_slice(&b),
            (Some(Run::Old(a)), Run::Old(b)) if a.end == b.start => a.end = b.end,
            (_, run) => self.0.push(run),
        }
    }

    /// Append the records of a later part of the walk.
    pub fn append(&mut self, other: Records) {
        for run in other.0 {
            self.push(run);
        }
    }
}

/// Counts kept while a tree is read, to tell whether the index needs rewriting.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// Entries taken from the old index.
    pub hits: usize,
    /// Files read whose facts can be recorded.
    pub stored_misses: usize,
}

/// The cache as one task folder's reader sees it: the old entries of that task, and the new
/// record it builds for the next index.
pub struct TaskCache<'a> {
    old: Vec<(u8, StatKey, Facts<&'a [u8]>)>,
    /// Where the old record lies in the old body.
    old_record: Option<Range<usize>>,
    /// Whether every entry so far is the old entry at the same place (then the old record
    /// is kept as it is).
    as_old: bool,
    enabled: bool,
    /// Entries of the new record: (id, key, facts).
    new: Vec<(u8, StatKey, Facts<Vec<u8>>)>,
    index_time: i64,
    now: i64,
    tally: &'a mut Tally,
    /// The task folder, open: files are stat'ed relative to it (one path component to walk
    /// instead of the whole absolute path).
    at: Option<rustix::fs::Dir>,
    /// Whether artifacts read in a folder that records inputs are read whole and hashed, for
    /// its staleness check ([`crate::task::snapshot::Snapshot::hashes`]); a read that decides
    /// no staleness turns it off.
    pub hash_inputs: bool,
}

impl<'a> TaskCache<'a> {
    /// No cache: every file is read (one task re-read by the driver).
    pub fn none(tally: &'a mut Tally) -> TaskCache<'a> {
        TaskCache {
            old: Vec::new(),
            old_record: None,
            as_old: true,
            enabled: false,
            new: Vec::new(),
            index_time: 0,
            now: 0,
            tally,
            at: None,
            hash_inputs: true,
        }
    }

    pub fn new(index: Option<&'a Index>, rel: &str, now: i64, tally: &'a mut Tally) -> Self {
        let (old, old_record) = index.map(|i| i.task(rel)).unwrap_or_default();
        TaskCache {
            old,
            old_record,
            as_old: true,
            enabled: true,
            new: Vec::new(),
            index_time: index.map_or(0, |i| i.written_ns),
            now,
            tally,
            at: None,
            hash_inputs: true,
        }
    }

    /// Stat and open the files of `path`'s folder relative to `dir` (that folder, open), from
    /// now on.
    pub fn set_dir(&mut self, dir: rustix::fs::Dir) {
        self.at = Some(dir);
    }

    /// The key of a regular file, following symlinks (as `fs::metadata`).
    fn stat(&self, path: &Path) -> Option<StatKey> {
        if let (Some(Ok(at)), Some(name)) = (self.at.as_ref().map(|d| d.fd()), path.file_name()) {
            let st = rustix::fs::statat(at, name, rustix::fs::AtFlags::empty()).ok()?;
            let is_file = rustix::fs::FileType::from_raw_mode(st.st_mode)
                == rustix::fs::FileType::RegularFile;
            return is_file.then(|| StatKey::of_stat(&st));
        }
        let m = std::fs::metadata(path).ok()?;
        m.is_file().then(|| StatKey::of(&m))
    }

    /// What the old index says of the file, when its key is still the recorded one. A file
    /// the old index has no entry for is not stat'ed: it is read anyway.
    fn lookup(&mut self, id: u8, path: &Path) -> Option<Facts<Vec<u8>>> {
        if !self.enabled || !self.old.iter().any(|(i, _, _)| *i == id) {
            return None;
        }
        let key = self.stat(path)?;
        let at = self
            .old
            .iter()
            .position(|(i, k, _)| *i == id && *k == key && !k.racy(self.index_time))?;
        let f = match &self.old[at].2 {
            Facts::Probe { content, utf8_ok } => Facts::Probe {
                content: *content,
                utf8_ok: *utf8_ok,
            },
            Facts::Bytes(b) => Facts::Bytes(b.to_vec()),
        };
        self.tally.hits += 1;
        self.as_old &= at == self.new.len();
        self.new.push((id, key, f.clone()));
        Some(f)
    }

    /// Open a file to read it, relative to the open folder where there is one; a regular file
    /// only (as [`crate::fsx::open_regular`]: a FIFO would block). With the index on, also its
    /// key, taken from the open file before a byte is read (a key taken after the read could
    /// pair older bytes with a newer key).
    fn open(&self, path: &Path) -> io::Result<(std::fs::File, Option<StatKey>)> {
        let (Some(at), Some(name)) = (self.at.as_ref().and_then(|d| d.fd().ok()), path.file_name())
        else {
            let file = crate::fsx::open_regular(path)?;
            let key = match self.enabled {
                true => Some(StatKey::of(&file.metadata()?)),
                false => None,
            };
            return Ok((file, key));
        };
        use rustix::fs::OFlags;
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let file = std::fs::File::from(rustix::fs::openat(
            at,
            name,
            flags,
            rustix::fs::Mode::empty(),
        )?);
        let st = rustix::fs::fstat(&file)?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", path.display()),
            ));
        }
        // O_NONBLOCK stays set: it changes nothing on a regular file.
        Ok((file, self.enabled.then(|| StatKey::of_stat(&st))))
    }

    fn store(&mut self, id: u8, key: Option<StatKey>, facts: Facts<Vec<u8>>) {
        if let Some(key) = key
            && !key.racy(self.now)
        {
            self.tally.stored_misses += 1;
            self.as_old = false;
            self.new.push((id, key, facts));
        }
    }

    /// Whether a file holds anything but whitespace, and whether its start is UTF-8.
    pub fn probe(
        &mut self,
        id: u8,
        path: &Path,
        read: impl FnOnce(&mut std::fs::File) -> io::Result<(bool, bool)>,
    ) -> io::Result<(bool, bool)> {
        if let Some(Facts::Probe { content, utf8_ok }) = self.lookup(id, path) {
            return Ok((content, utf8_ok));
        }
        let (mut file, key) = self.open(path)?;
        let (content, utf8_ok) = read(&mut file)?;
        self.store(id, key, Facts::Probe { content, utf8_ok });
        Ok((content, utf8_ok))
    }

    /// The bytes of a small file, at most `limit` of them, and whether the file was longer
    /// (those are not kept).
    pub fn bytes(&mut self, id: u8, path: &Path, limit: usize) -> io::Result<(Vec<u8>, bool)> {
        if let Some(Facts::Bytes(b)) = self.lookup(id, path) {
            return Ok((b, false));
        }
        let (file, key) = self.open(path)?;
        let mut bytes = Vec::new();
        io::Read::read_to_end(
            &mut io::Read::take(file, (limit as u64).saturating_add(1)),
            &mut bytes,
        )?;
        let truncated = bytes.len() > limit;
        bytes.truncate(limit);
        if !truncated
            && bytes.len() <= MAX_KEPT_BYTES
            && key.is_some_and(|k| k.size == bytes.len() as u64)
        {
            self.store(id, key, Facts::Bytes(bytes.clone()));
        }
        Ok((bytes, truncated))
    }

    /// Append this task's record to `records` (nothing when it has no entries).
    pub fn finish(self, rel: &str, records: &mut Records) {
        if !self.enabled || self.new.is_empty() || rel.len() > usize::from(u16::MAX) {
            return;
        }
        if let Some(record) = self.old_record.filter(|_| self.as_old)
            && self.new.len() == self.old.len()
        {
            records.push(Run::Old(record));
            return;
        }
        let mut out = Vec::new();
        out.extend_from_slice(&(rel.len() as u16).to_le_bytes());
        out.extend_from_slice(rel.as_bytes());
        out.push(self.new.len().min(255) as u8);
        for (id, key, facts) in self.new.iter().take(255) {
            out.push(*id);
            put_varint(&mut out, key.size);
            out.extend_from_slice(&key.mtime_ns.to_le_bytes());
            put_varint(&mut out, zigzag(key.ctime_ns.wrapping_sub(key.mtime_ns)));
            put_varint(&mut out, key.ino);
            match facts {
                Facts::Probe { content, utf8_ok } => {
                    out.push(u8::from(*content) | (u8::from(*utf8_ok) << 1));
                }
                Facts::Bytes(b) => {
                    out.push(BYTES_KIND);
                    put_varint(&mut out, b.len() as u64);
                    out.extend_from_slice(b);
                }
            }
        }
        records.push(Run::New(out));
    }
}

/// Nanoseconds since the epoch, now.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Write a new index from the records of a walk, when it differs from the old one; best
/// effort (a read-only project keeps no index, and nothing is reported).
pub fn save(
    project: &Path,
    old: Option<&Index>,
    tasks: usize,
    tally: Tally,
    records: &Records,
    now: i64,
) {
    if old.is_none() && tasks < MIN_TASKS {
        return;
    }
    let unchanged = old.is_some_and(|o| tally.stored_misses == 0 && tally.hits == o.entries);
    if unchanged {
        return;
    }
    let mut body: Vec<&[u8]> = Vec::with_capacity(records.0.len());
    for run in &records.0 {
        match run {
            Run::New(b) => body.push(b),
            Run::Old(r) => match old.and_then(|o| o.body.get(r.clone())) {
                Some(b) => body.push(b),
                None => return,
            },
        }
    }
    let len: usize = body.iter().map(|b| b.len()).sum();
    let mut file = Vec::with_capacity(HEADER + len);
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&(len as u64).to_le_bytes());
    file.extend_from_slice(&[0; 8]);
    file.extend_from_slice(&now.to_le_bytes());
    for b in body {
        file.extend_from_slice(b);
    }
    let sum = checksum(&file[HEADER - 8..]);
    file[16..24].copy_from_slice(&sum.to_le_bytes());
    let path: PathBuf = project.join(INDEX_FILE);
    if project.join(".automaton").is_dir()
        || std::fs::create_dir(project.join(".automaton")).is_ok()
    {
        let _ = crate::fsx::write_rebuildable(&path, &file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(rel: &str, entries: usize) -> Records {
        let mut tally = Tally::default();
        let mut c = TaskCache::none(&mut tally);
        c.enabled = true;
        for i in 0..entries {
            c.new.push((
                i as u8,
                StatKey {
                    size: 3,
                    mtime_ns: 1,
                    ctime_ns: 1,
                    ino: 7,
                },
                if i % 2 == 0 {
                    Facts::Probe {
                        content: true,
                        utf8_ok: false,
                    }
                } else {
                    Facts::Bytes(b"abc".to_vec())
                },
            ));
        }
        let mut out = Records::default();
        c.finish(rel, &mut out);
        out
    }

    #[test]
    fn round_trip_and_every_corruption_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut parts = record("tasks/a", 3);
        parts.append(record("tasks/b/subtasks/c", 2));
        save(
            dir.path(),
            None,
            MIN_TASKS,
            Tally::default(),
            &parts,
            1_000_000_000_000,
        );
        let bytes = std::fs::read(dir.path().join(INDEX_FILE)).unwrap();
        let index = Index::parse(bytes.clone()).unwrap();
        assert_eq!(index.entries(), 5);
        let a = index.task("tasks/a").0;
        assert_eq!(a.len(), 3);
        assert_eq!(a[1].2, Facts::Bytes(&b"abc"[..]));
        assert!(index.task("tasks/x").0.is_empty());
        // Any one byte changed, or the file cut anywhere, and the index is not used.
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(Index::parse(b).is_none(), "byte {i}");
            assert!(Index::parse(bytes[..i].to_vec()).is_none(), "cut at {i}");
        }
    }

    /// A recorded entry is used only when the key matches and the file is older than the
    /// index by more than RACY_NS; otherwise the file is read.
    #[test]
    fn entries_are_used_only_when_clean() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("SPEC.md");
        std::fs::write(&f, "real\n").unwrap();
        let key = StatKey::of(&std::fs::metadata(&f).unwrap());
        let body = |time: i64, key: StatKey| {
            let mut tally = Tally::default();
            let mut c = TaskCache::none(&mut tally);
            c.enabled = true;
            c.new.push((0, key, Facts::Bytes(b"cached\n".to_vec())));
            let mut out = Records::default();
            c.finish("tasks/a", &mut out);
            save(dir.path(), None, MIN_TASKS, Tally::default(), &out, time);
            Index::load(dir.path()).unwrap()
        };
        let read = |index: &Index| {
            let mut tally = Tally::default();
            let mut c = TaskCache::new(Some(index), "tasks/a", now_ns(), &mut tally);
            let (b, _) = c.bytes(0, &f, usize::MAX).unwrap();
            String::from_utf8(b).unwrap()
        };
        let clean = key.mtime_ns.max(key.ctime_ns) + RACY_NS + 1;
        assert_eq!(read(&body(clean, key)), "cached\n", "clean entry used");
        assert_eq!(read(&body(clean - 2, key)), "real\n", "racy entry not used");
        let other = StatKey {
            ino: key.ino + 1,
            ..key
        };
        assert_eq!(read(&body(clean, other)), "real\n", "other inode");
        let other = StatKey {
            ctime_ns: key.ctime_ns - 1,
            ..key
        };
        assert_eq!(read(&body(clean, other)), "real\n", "other ctime");
    }

    /// A walk that finds some tasks as the index recorded them keeps their records by range
    /// and writes the changed ones anew: the index it saves answers for all of them.
    #[test]
    fn unchanged_records_are_kept_and_changed_ones_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        for t in ["a", "b", "c"] {
            std::fs::create_dir_all(dir.path().join("tasks").join(t)).unwrap();
            std::fs::write(dir.path().join(format!("tasks/{t}/SPEC.md")), t).unwrap();
        }
        let walk = |index: Option<&Index>, now: i64| {
            let mut tally = Tally::default();
            let mut records = Records::default();
            for t in ["a", "b", "c"] {
                let rel = format!("tasks/{t}");
                let mut c = TaskCache::new(index, &rel, now, &mut tally);
                c.bytes(0, &dir.path().join(&rel).join("SPEC.md"), 64)
                    .unwrap();
                c.finish(&rel, &mut records);
            }
            (records, tally)
        };
        let later = now_ns() + 3 * RACY_NS;
        let (records, tally) = walk(None, later);
        save(dir.path(), None, MIN_TASKS, tally, &records, later);
        let first = Index::load(dir.path()).unwrap();
        std::fs::write(dir.path().join("tasks/b/SPEC.md"), "bb").unwrap();
        let (records, tally) = walk(Some(&first), later);
        assert!(
            matches!(&records.0[..], [Run::Old(_), Run::New(_), Run::Old(_)]),
            "a and c kept, b new"
        );
        save(
            dir.path(),
            Some(&first),
            MIN_TASKS,
            tally,
            &records,
            later + 1,
        );
        let second = Index::load(dir.path()).unwrap();
        for (t, text) in [("a", "a"), ("b", "bb"), ("c", "c")] {
            let entries = second.task(&format!("tasks/{t}")).0;
            assert_eq!(entries.len(), 1, "{t}");
            assert_eq!(entries[0].2, Facts::Bytes(text.as_bytes()), "{t}");
        }
        // Nothing changed since: every record is kept, as one run.
        let (records, tally) = walk(Some(&second), later + 2);
        assert!(matches!(&records.0[..], [Run::Old(_)]));
        assert_eq!(tally.hits, second.entries());
    }

    /// Keys at the ends of their ranges come back as written (varints, ctime as a delta).
    #[test]
    fn extreme_keys_round_trip() {
        let keys = [
            (0, 0, 0, 0),
            (u64::MAX, i64::MIN, i64::MAX, u64::MAX),
            (1 << 40, i64::MAX, i64::MIN, 1),
            (127, -1, 1, 128),
        ];
        let mut tally = Tally::default();
        let mut c = TaskCache::none(&mut tally);
        c.enabled = true;
        for (i, (size, mtime_ns, ctime_ns, ino)) in keys.into_iter().enumerate() {
            let key = StatKey {
                size,
                mtime_ns,
                ctime_ns,
                ino,
            };
            c.new
                .push((i as u8, key, Facts::Bytes(vec![i as u8; 200 * i])));
        }
        let mut records = Records::default();
        c.finish("tasks/a", &mut records);
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), None, MIN_TASKS, Tally::default(), &records, 0);
        let index = Index::load(dir.path()).unwrap();
        let entries = index.task("tasks/a").0;
        assert_eq!(entries.len(), keys.len());
        for (i, (id, key, facts)) in entries.into_iter().enumerate() {
            let (size, mtime_ns, ctime_ns, ino) = keys[i];
            assert_eq!(id, i as u8);
            assert_eq!(
                key,
                StatKey {
                    size,
                    mtime_ns,
                    ctime_ns,
                    ino
                }
            );
            assert_eq!(facts, Facts::Bytes(&vec![i as u8; 200 * i][..]));
        }
    }

    #[test]
    fn small_trees_get_no_index() {
        let dir = tempfile::tempdir().unwrap();
        save(
            dir.path(),
            None,
            MIN_TASKS - 1,
            Tally::default(),
            &record("tasks/a", 1),
            0,
        );
        assert!(!dir.path().join(".automaton").exists());
    }
}
