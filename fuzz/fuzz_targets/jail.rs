//! The workspace jail's path resolution, on random paths (relative, absolute, `..`, `.`,
//! symlinks) against a temp tree with links pointing inside, outside and nowhere.
//! In the input, `@` stands for the tree's base folder, so absolute paths reach it.
//!
//! Property: a path is refused, or it resolves to a canonical path inside a root and outside
//! the forbidden folder: absolute, without `.`/`..`, its existing part free of symlinks (so
//! what the tools open is that path, not a link's target) and nothing after it existing.
#![no_main]

#[path = "common/tree.rs"]
mod tree;

use std::path::{Component, Path};

use corvid_core::roots::Roots;
use corvid_core::tools::Jail;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let t = tree::tree();
    let path = String::from_utf8_lossy(data).replace('@', &t.base.to_string_lossy());
    let jail = Jail::new(Roots::new(t.root.clone(), vec![t.root2.clone()]), vec![t.forbidden.clone()]);
    let Ok(resolved) = jail.resolve(&path) else { return };
    let why = |what: &str| format!("{path:?} resolved to {resolved:?}, {what}");
    assert!(resolved.is_absolute(), "{}", why("not absolute"));
    assert!(
        resolved.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_))),
        "{}",
        why("not normalized")
    );
    assert!(resolved.starts_with(&t.root) || resolved.starts_with(&t.root2), "{}", why("outside the roots"));
    assert!(!resolved.starts_with(&t.forbidden), "{}", why("inside the forbidden folder"));
    // The longest part of the path that exists (links not followed) must be canonical.
    let mut existing: &Path = &resolved;
    while std::fs::symlink_metadata(existing).is_err() {
        existing = existing.parent().expect("the root exists");
    }
    let canonical = std::fs::canonicalize(existing).ok();
    assert_eq!(canonical.as_deref(), Some(existing), "{}", why("its existing part is not canonical"));
});
