//! The policy one command runs under: what it may read, write and reach. It travels to the
//! launcher as JSON on its command line, so it holds only paths and switches, and it is built
//! here from a session's roots, the forbidden paths and the `[sandbox]` config.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::config::{Config, SandboxMode};
use crate::roots::Roots;

/// System configuration the file tools may not touch but commands must read to run at all
/// (the loader's cache, users and groups, certificates): readable, never writable.
const READABLE_SYSTEM: &[&str] = &["/etc"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The session's folders, the cwd first: writable unless `read_only`.
    pub roots: Vec<PathBuf>,
    /// `[sandbox] writable_roots`: writable too, unless `read_only`.
    #[serde(default)]
    pub writable_roots: Vec<PathBuf>,
    /// The session's own temp dir, always writable; the launcher exports it as `TMPDIR`.
    pub tmp: PathBuf,
    /// Only the temp dir and device files are writable.
    #[serde(default)]
    pub read_only: bool,
    /// Network sockets allowed (Unix sockets always are).
    #[serde(default)]
    pub network: bool,
    /// Neither readable nor writable, wherever they are (inside a root too).
    #[serde(default)]
    pub forbidden: Vec<PathBuf>,
    /// Readable but never writable, even inside a root.
    #[serde(default)]
    pub read_only_paths: Vec<PathBuf>,
    /// The launcher refuses to run the command if Landlock cannot be enforced.
    #[serde(default)]
    pub required: bool,
}

impl Policy {
    /// The policy of one session's commands. `read_only_session`: the session's permission
    /// mode is `read-only`, which confines commands like `[sandbox] mode = "read-only"`.
    pub fn for_session(config: &Config, roots: &Roots, session_id: &str, read_only_session: bool) -> Self {
        let mut forbidden = Vec::new();
        let mut read_only_paths = Vec::new();
        for path in &config.forbidden_paths {
            let path = canonical(path);
            if READABLE_SYSTEM.iter().any(|s| canonical(Path::new(s)) == path) {
                read_only_paths.push(path);
            } else {
                forbidden.push(path);
            }
        }
        // Corvid's own secrets and records: the config file (API keys) and the data dir
        // (every session's history). The session's temp dir inside it gets its own rule.
        forbidden.extend(config.source.iter().map(|p| canonical(p)));
        forbidden.push(canonical(&config.data_dir));
        Policy {
            roots: roots.iter().map(Path::to_path_buf).collect(),
            writable_roots: config.sandbox.writable_roots.iter().map(|p| canonical(p)).collect(),
            tmp: tmp_dir(&canonical(&config.data_dir), session_id),
            read_only: read_only_session || config.sandbox.mode == SandboxMode::ReadOnly,
            network: config.sandbox.network,
            forbidden,
            read_only_paths,
            required: config.sandbox.required,
        }
    }

    pub fn to_json(&self) -> String {
        // A struct of paths and booleans always serializes; the fallback is never used.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The folders commands may write to besides the temp dir: the roots and
    /// `writable_roots`, unless read-only. (The temp dir lies in the forbidden data dir on
    /// purpose and gets a rule of its own.)
    pub fn write_bases(&self) -> Vec<&Path> {
        if self.read_only {
            return Vec::new();
        }
        self.roots.iter().chain(&self.writable_roots).map(PathBuf::as_path).collect()
    }

    /// What no write rule may cover.
    pub fn unwritable(&self) -> Vec<PathBuf> {
        self.forbidden.iter().chain(&self.read_only_paths).cloned().collect()
    }
}

/// `<data_dir>/tmp/<session>`: the session id as is when it is a plain name (Corvid's are
/// UUIDs), else its digest, so no id can point the temp dir elsewhere.
fn tmp_dir(data_dir: &Path, session_id: &str) -> PathBuf {
    let plain = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let name = if plain {
        session_id.to_string()
    } else {
        sha2::Sha256::digest(session_id.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    };
    data_dir.join("tmp").join(name)
}

/// Rules are compared with canonical paths (what the kernel resolves); a path that does not
/// exist (yet) is kept absolute as given.
fn canonical(path: &Path) -> PathBuf {
    dunce::canonicalize(path).unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(home: &Path) -> Config {
        Config {
            data_dir: home.join("data"),
            source: Some(home.join("config.toml")),
            forbidden_paths: crate::config::default_forbidden_paths(Some(home)),
            ..Config::default()
        }
    }

    #[test]
    fn json_round_trip() {
        let home = Path::new("/nonexistent/home");
        let roots = Roots::new("/nonexistent/w".into(), vec!["/nonexistent/docs".into()]);
        let policy = Policy::for_session(&config(home), &roots, "0b5e-42", false);
        let back = Policy::from_json(&policy.to_json()).expect("parses");
        assert_eq!(back, policy);
        assert!(Policy::from_json(r#"{"roots":[],"tmp":"/t","bogus":1}"#).is_err(), "unknown fields are refused");
        let minimal = Policy::from_json(r#"{"roots":["/w"],"tmp":"/t"}"#).expect("defaults");
        assert!(!minimal.network && !minimal.read_only && minimal.forbidden.is_empty());
    }

    #[test]
    fn built_from_the_session_and_the_config() {
        let home = Path::new("/nonexistent/home");
        let roots = Roots::new("/nonexistent/w".into(), vec![]);
        let mut c = config(home);
        let p = Policy::for_session(&c, &roots, "s1", false);
        assert_eq!(p.roots, vec![PathBuf::from("/nonexistent/w")]);
        assert_eq!(p.tmp, home.join("data/tmp/s1"));
        assert!(p.forbidden.contains(&home.join(".ssh")));
        assert!(p.forbidden.contains(&home.join("config.toml")) && p.forbidden.contains(&home.join("data")));
        assert!(p.read_only_paths.contains(&canonical(Path::new("/etc"))), "{p:?}");
        assert!(!p.forbidden.contains(&canonical(Path::new("/etc"))));
        assert_eq!(p.write_bases(), vec![Path::new("/nonexistent/w")]);

        // The session's read-only mode and the config's read-only sandbox both leave only TMPDIR.
        assert!(Policy::for_session(&c, &roots, "s1", true).write_bases().is_empty());
        c.sandbox.mode = SandboxMode::ReadOnly;
        assert!(Policy::for_session(&c, &roots, "s1", false).read_only);
    }

    #[test]
    fn an_odd_session_id_cannot_move_the_temp_dir() {
        let t = tmp_dir(Path::new("/d"), "../../etc");
        assert_eq!(t.parent(), Some(Path::new("/d/tmp")));
        assert_eq!(t.file_name().map(|n| n.len()), Some(64));
    }
}
