//! The schema stamp: a fingerprint of the SQLite migrations a file holds, kept in its header's
//! `user_version`, so that a start can tell from the first 64 bytes of the file (and the copies
//! of them in its write-ahead log), without a connection or a query, that the file holds
//! exactly this build's migrations.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// What `sqlite::open` reads from the file before connecting (SQLite's file format: bytes 18
/// and 19 are 2 in WAL mode; bytes 60 to 63 hold `user_version`, big-endian).
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    pub wal: bool,
    pub stamp: u32,
}

impl Header {
    /// `None`: no such file, or too short to be a database yet.
    pub fn read(db: &Path) -> Option<Header> {
        let mut bytes = [0u8; 64];
        std::fs::File::open(db).and_then(|mut f| f.read_exact(&mut bytes)).ok()?;
        Some(Header::parse(&bytes))
    }

    fn parse(bytes: &[u8; 64]) -> Header {
        let stamp = u32::from_be_bytes([bytes[60], bytes[61], bytes[62], bytes[63]]);
        Header { wal: bytes[18..20] == [2, 2], stamp }
    }

    /// Whether the file holds the migrations `fingerprint` stands for: its header says so, and
    /// so does every later version of the header waiting in its write-ahead log (another
    /// process at work, or one that was killed: the log is only folded into the file, and
    /// removed, by a clean close). The header is page 1, and any change of the schema rewrites
    /// it (the schema's cookie is there), as does the stamp; `sqlite::open` clears the stamp
    /// before it migrates. So a log whose copies of page 1 all carry this stamp holds no
    /// migration but ours, whatever else it holds.
    pub fn is_current(&self, db: &Path, fingerprint: u32) -> bool {
        let ours = |h: &Header| h.wal && h.stamp == fingerprint;
        ours(self) && logged_headers(db).is_some_and(|logged| logged.iter().all(ours))
    }
}

/// The log is read only this far (frames of 4 KiB: 8 MiB, twice what the store lets it grow to
/// between checkpoints); a longer one is not vouched for.
const MAX_LOGGED_FRAMES: u64 = 2048;

/// The copies of page 1's header in `db`'s write-ahead log (none without a log, or with an
/// empty one). Only the log's current run of frames counts: the frames whose salt matches the
/// log's header; what follows is left from before the log last started over, and SQLite
/// ignores it too. Frames SQLite would ignore for their checksum (a write cut short) are read
/// anyway: one more header to agree can only say no. `None`: a log that cannot be read, is not
/// one, or is longer than [`MAX_LOGGED_FRAMES`].
fn logged_headers(db: &Path) -> Option<Vec<Header>> {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    let file = match std::fs::File::open(name) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Vec::new()),
        Err(_) => return None,
    };
    let len = file.metadata().ok()?.len();
    if len == 0 {
        return Some(Vec::new());
    }
    // SQLite's log format: a 32-byte header (magic, version, page size, checkpoint count, two
    // salts, checksum), then frames of a 24-byte header (page number, size after a commit,
    // the salts, checksum) and one page.
    let mut log = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut head = [0u8; 32];
    log.read_exact(&mut head).ok()?;
    let word = |b: &[u8], at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    if !matches!(word(&head, 0), 0x377f_0682 | 0x377f_0683) {
        return None;
    }
    let page = word(&head, 8);
    if !(512..=65536).contains(&page) || !page.is_power_of_two() {
        return None;
    }
    let frames = (len - 32) / (24 + u64::from(page));
    if frames > MAX_LOGGED_FRAMES {
        return None;
    }
    let mut headers = Vec::new();
    let mut frame = [0u8; 24];
    for _ in 0..frames {
        log.read_exact(&mut frame).ok()?;
        if frame[8..16] != head[16..24] {
            break;
        }
        if word(&frame, 0) == 1 {
            let mut bytes = [0u8; 64];
            log.read_exact(&mut bytes).ok()?;
            headers.push(Header::parse(&bytes));
            log.seek_relative(i64::from(page) - 64).ok()?;
        } else {
            log.seek_relative(i64::from(page)).ok()?;
        }
    }
    Some(headers)
}

/// The stamp for a set of migrations (version and checksum of each, in order): 31 bits of
/// SHA-256 over them, so a build whose migrations differ in any way (one more, one changed)
/// stamps differently. 31, not 32: `user_version` is a signed integer, and a positive one is
/// written the same way by every SQLite.
pub(super) fn fingerprint<'a>(migrations: impl Iterator<Item = (i64, &'a [u8])>) -> u32 {
    let mut hash = Sha256::new();
    for (version, checksum) in migrations {
        hash.update(version.to_be_bytes());
        hash.update((checksum.len() as u64).to_be_bytes());
        hash.update(checksum);
    }
    let digest = hash.finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0x7fff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of 512-byte pages with `salt` in its header, and frames of (page, salt, stamp).
    fn log(salt: u8, frames: &[(u32, u8, u32)]) -> Vec<u8> {
        let mut bytes = vec![0u8; 32];
        bytes[..4].copy_from_slice(&0x377f_0682u32.to_be_bytes());
        bytes[8..12].copy_from_slice(&512u32.to_be_bytes());
        bytes[16..24].fill(salt);
        for &(page, salt, stamp) in frames {
            let mut frame = vec![0u8; 24 + 512];
            frame[..4].copy_from_slice(&page.to_be_bytes());
            frame[8..16].fill(salt);
            frame[24 + 18..24 + 20].copy_from_slice(&[2, 2]);
            frame[24 + 60..24 + 64].copy_from_slice(&stamp.to_be_bytes());
            bytes.extend(frame);
        }
        bytes
    }

    #[test]
    fn the_headers_in_the_log_are_those_of_its_current_run() -> std::io::Result<()> {
        let dir = std::env::temp_dir().join(format!("corvid-log-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)?;
        let db = dir.join("s.db");
        let headers = |bytes: &[u8]| -> std::io::Result<Option<Vec<u32>>> {
            std::fs::write(dir.join("s.db-wal"), bytes)?;
            Ok(logged_headers(&db).map(|h| h.iter().map(|h| h.stamp).collect()))
        };
        assert_eq!(logged_headers(&db).map(|h| h.len()), Some(0), "no log");
        assert_eq!(headers(b"")?, Some(vec![]), "an empty log");
        // Page 1 twice in this run; the frames after the salt changes are an older run's.
        let current = [(2, 7, 0), (1, 7, 11), (3, 7, 0), (1, 7, 12), (1, 6, 99), (2, 7, 98)];
        assert_eq!(headers(&log(7, &current))?, Some(vec![11, 12]));
        assert_eq!(headers(&log(7, &[(1, 7, 11), (1, 7, 0)]))?, Some(vec![11, 0]));
        let mut torn = log(7, &[(1, 7, 11)]);
        torn.truncate(torn.len() - 100);
        assert_eq!(headers(&torn)?, Some(vec![]), "a frame cut short is not counted");
        let mut not_a_log = log(7, &[(1, 7, 11)]);
        not_a_log[0] = 0;
        assert_eq!(headers(&not_a_log)?, None);
        assert_eq!(headers(b"frames")?, None, "too short for a log's header");
        let long = vec![(2, 7, 0); MAX_LOGGED_FRAMES as usize + 1];
        assert_eq!(headers(&log(7, &long))?, None, "longer than is read at start");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn any_difference_in_the_migrations_changes_the_stamp() {
        let ours = [(1, &b"one"[..]), (2, &b"two"[..])];
        let stamp = fingerprint(ours.into_iter());
        assert_eq!(stamp, fingerprint(ours.into_iter()), "the same migrations, the same stamp");
        assert!(stamp <= i32::MAX as u32);
        for other in [
            vec![(1, &b"one"[..])],
            vec![(1, &b"one"[..]), (2, &b"twO"[..])],
            vec![(1, &b"one"[..]), (3, &b"two"[..])],
            vec![(1, &b"one"[..]), (2, &b"two"[..]), (3, &b"three"[..])],
            vec![(1, &b"on"[..]), (2, &b"etwo"[..])],
        ] {
            assert_ne!(stamp, fingerprint(other.clone().into_iter()), "{other:?}");
        }
    }
}
