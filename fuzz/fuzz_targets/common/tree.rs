#![allow(dead_code)] // Each target uses part of it.

//! A small directory tree for the targets that touch the file system, built once per process:
//! two roots and an outside folder, with symlinks that point inside, outside, nowhere
//! (dangling, inside and outside) and at themselves.
//!
//! ```text
//! <base>/root/       src/a.txt, forbidden/f.txt (forbidden), link-in -> src, link-in-abs,
//!                    link-out -> ../outside, link-out-abs, link-up -> .., secret-link ->
//!                    ../outside/secret.txt, dangling-in -> src/new.txt, dangling-out ->
//!                    ../outside/new.txt, dangling-dir -> ../outside/nodir/x, loop -> loop,
//!                    link-forbidden -> forbidden
//! <base>/root2/      b.txt, to-root -> ../root/src
//! <base>/outside/    secret.txt, back-in -> ../root/src
//! ```

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Content of the files no link may inline.
pub const OUTSIDE_SECRET: &str = "OUTSIDE-SECRET-7f3a";
pub const FORBIDDEN_SECRET: &str = "FORBIDDEN-SECRET-9c1b";

pub struct Tree {
    pub base: PathBuf,
    pub root: PathBuf,
    pub root2: PathBuf,
    pub outside: PathBuf,
    pub forbidden: PathBuf,
}

pub fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(build)
}

fn build() -> Tree {
    let base = std::env::temp_dir().join(format!("corvid-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for d in ["root/src", "root/forbidden", "root2", "outside"] {
        std::fs::create_dir_all(base.join(d)).expect("mkdir");
    }
    let base = std::fs::canonicalize(&base).expect("canonical base");
    let (root, root2, outside) = (base.join("root"), base.join("root2"), base.join("outside"));
    let write = |p: PathBuf, s: &str| std::fs::write(p, s).expect("write");
    write(root.join("src/a.txt"), "inside a");
    write(root.join("forbidden/f.txt"), FORBIDDEN_SECRET);
    write(root2.join("b.txt"), "inside b");
    write(outside.join("secret.txt"), OUTSIDE_SECRET);
    let link = |target: &Path, at: PathBuf| symlink(target, at).expect("symlink");
    link(Path::new("src"), root.join("link-in"));
    link(&root.join("src"), root.join("link-in-abs"));
    link(Path::new("../outside"), root.join("link-out"));
    link(&outside, root.join("link-out-abs"));
    link(Path::new(".."), root.join("link-up"));
    link(Path::new("../outside/secret.txt"), root.join("secret-link"));
    link(Path::new("src/new.txt"), root.join("dangling-in"));
    link(Path::new("../outside/new.txt"), root.join("dangling-out"));
    link(Path::new("../outside/nodir/x"), root.join("dangling-dir"));
    link(Path::new("loop"), root.join("loop"));
    link(Path::new("forbidden"), root.join("link-forbidden"));
    link(Path::new("../root/src"), root2.join("to-root"));
    link(Path::new("../root/src"), outside.join("back-in"));
    let forbidden = root.join("forbidden");
    Tree { base, root, root2, outside, forbidden }
}

/// Names of everything under `dir` (recursively, links not followed), to notice writes.
pub fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}
