//! A generated tree that the `search` tool takes seconds to walk: many small text files and a
//! pattern that never matches them (so every file is read to the end) and has no literal the
//! searcher could skip ahead to (so the regex engine works on every line).
//!
//! How long a walk takes depends on the machine, so the tree is sized by measurement: one
//! directory is generated and searched directly (`corvid_core::tools::search::search`, the
//! tool's own code) with each candidate pattern; the slowest one is kept, and enough
//! directories are added for the whole walk to take about the target.

use std::path::Path;
use std::time::{Duration, Instant};

use corvid_core::roots::Roots;
use corvid_core::tools::Jail;
use serde_json::json;

use super::TempDir;

/// None of these match the generated text, and none contains a literal. Unicode classes and
/// word boundaries on non-ASCII text keep the regex engine off its fastest paths.
const CANDIDATES: &[&str] = &[r"\b\w{12}\b\s+\d{4}\s+\b\w{12}\b", r"(\pL+\s+){8}\pN{5}\s+\pL", r"(\w+\s+){6}\d{3}\W\d"];
const FILES_PER_DIR: usize = 50;
/// Directories generated and walked to measure.
const SAMPLE_DIRS: usize = 4;
const LINES_PER_FILE: usize = 100;
/// Upper bound on the tree (30 000 files), whatever the measurement says.
const MAX_DIRS: usize = 600;

fn write_dir(dir: &Path, seed: usize) {
    std::fs::create_dir_all(dir).expect("create a tree directory");
    for f in 0..FILES_PER_DIR {
        let mut text = String::with_capacity(LINES_PER_FILE * 80);
        for l in 0..LINES_PER_FILE {
            text.push_str(&format!("lorem ipsum dolor sit amet {seed} {f} {l} consectetur adipiscing élit ñam\n"));
        }
        std::fs::write(dir.join(format!("f{f:03}.txt")), text).expect("write a tree file");
    }
}

fn walk_time(root: &Path, pattern: &str) -> Duration {
    let jail = Jail::new(Roots::new(root.to_path_buf(), Vec::new()), vec![]);
    let started = Instant::now();
    let never = tokio_util::sync::CancellationToken::new();
    let out =
        corvid_core::tools::search::search(&json!({ "pattern": pattern }), &jail, &never).expect("search the sample");
    assert!(out.for_model.contains("no matches"), "`{pattern}` must not match the tree: {}", out.for_model);
    started.elapsed()
}

/// The generated tree, the pattern to search it for, and how long a full walk should take.
pub struct LongTree {
    pub dir: TempDir,
    pub pattern: String,
    pub estimate: Duration,
}

/// A tree whose full `search` takes about `target` on this machine.
pub async fn long_search_tree(target: Duration) -> LongTree {
    tokio::task::spawn_blocking(move || {
        let dir = TempDir::new();
        write_dir(&dir.path().join("d000"), 0);
        let one = dir.path().join("d000");
        for d in 1..SAMPLE_DIRS {
            write_dir(&dir.path().join(format!("d{d:03}")), d);
        }
        // Per directory, without what every walk pays once (building the regex, the first
        // open): the sample's time less that of its first directory alone. Each walk is timed
        // twice and the faster kept (the first one also warms up).
        let time = |root: &Path, p: &str| walk_time(root, p).min(walk_time(root, p));
        let (pattern, per_dir) = CANDIDATES
            .iter()
            .map(|p| (*p, time(dir.path(), p).saturating_sub(time(&one, p)) / (SAMPLE_DIRS as u32 - 1)))
            .max_by_key(|(_, t)| *t)
            .expect("a candidate pattern");
        let per_dir = per_dir.max(Duration::from_micros(100));
        let dirs = ((target.as_secs_f64() / per_dir.as_secs_f64()).ceil() as usize).clamp(SAMPLE_DIRS, MAX_DIRS);
        for d in SAMPLE_DIRS..dirs {
            write_dir(&dir.path().join(format!("d{d:03}")), d);
        }
        LongTree { dir, pattern: pattern.to_string(), estimate: per_dir * dirs as u32 }
    })
    .await
    .expect("generate the tree")
}
