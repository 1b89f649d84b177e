//! The schema stamp: a fingerprint of the SQLite migrations a file holds, kept in its header's
//! `user_version`, so that a start can tell from the first 64 bytes of the file, without a
//! connection or a query, that the file holds exactly this build's migrations.

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
        use std::io::Read;
        let mut bytes = [0u8; 64];
        std::fs::File::open(db).and_then(|mut f| f.read_exact(&mut bytes)).ok()?;
        let stamp = u32::from_be_bytes([bytes[60], bytes[61], bytes[62], bytes[63]]);
        Some(Header { wal: bytes[18..20] == [2, 2], stamp })
    }

    /// Whether the file holds the migrations `fingerprint` stands for. Only while its log is
    /// empty: the header on disk is then the file's whole truth (a clean close checkpoints the
    /// log into the file and removes it). With frames in the log (another process at work, or
    /// one that crashed) the header may be older than what the log holds, such as a newer
    /// Corvid's migration.
    pub fn is_current(&self, db: &Path, fingerprint: u32) -> bool {
        self.wal && self.stamp == fingerprint && log_is_empty(db)
    }
}

/// No `<db>-wal`, or an empty one.
fn log_is_empty(db: &Path) -> bool {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    match std::fs::metadata(name) {
        Ok(meta) => meta.len() == 0,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
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
