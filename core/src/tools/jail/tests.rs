//! The jail's tests, on one temporary tree: a root with a forbidden folder, and a folder
//! outside it for links to point at.

use std::fs::File;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use super::beneath::Open;
use super::*;
use crate::roots::Roots;

fn tree() -> (PathBuf, PathBuf, Jail) {
    let base = std::env::temp_dir().join(format!("corvid-jail-{}", uuid::Uuid::new_v4()));
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(root.join("src/a.txt"), "a").expect("write");
    std::fs::write(outside.join("secret.txt"), "s").expect("write");
    let root = std::fs::canonicalize(root).expect("canon");
    let outside = std::fs::canonicalize(outside).expect("canon");
    let jail = Jail::new(Roots::new(root.clone(), Vec::new()), vec![root.join("forbidden")]);
    (root, outside, jail)
}

#[test]
fn inside_paths_resolve() {
    let (root, _, jail) = tree();
    assert_eq!(jail.resolve("src/a.txt"), Ok(root.join("src/a.txt")));
    assert_eq!(jail.resolve("./src/../src/a.txt"), Ok(root.join("src/a.txt")));
    assert_eq!(jail.resolve("new/dir/file.rs"), Ok(root.join("new/dir/file.rs")));
    assert!(jail.resolve(root.join("src").to_str().expect("utf8")).is_ok());
}

#[test]
fn escapes_are_refused() {
    let (root, outside, jail) = tree();
    assert!(matches!(jail.resolve("../outside/secret.txt"), Err(JailError::Outside(..))));
    assert!(matches!(jail.resolve(outside.join("secret.txt").to_str().expect("utf8")), Err(JailError::Outside(..))));
    assert!(jail.resolve("/../../../../etc/passwd").is_err());
    assert!(matches!(jail.resolve("a\0b"), Err(JailError::Nul)));
    symlink(&outside, root.join("link-out")).expect("symlink");
    assert!(matches!(jail.resolve("link-out/secret.txt"), Err(JailError::Outside(..))));
    assert!(matches!(jail.resolve("link-out/new-file"), Err(JailError::Outside(..))));
    assert!(matches!(jail.resolve("forbidden/x"), Err(JailError::Forbidden(..))));
}

/// Found by the `jail` fuzz target: a dangling link resolved to itself, so writing to it
/// created its target outside the roots; a link loop resolved to a path through the loop.
#[test]
fn dangling_and_looping_links_are_followed_or_refused() {
    let (root, outside, jail) = tree();
    symlink(outside.join("new.txt"), root.join("dangling-out")).expect("symlink");
    symlink("src/new.txt", root.join("dangling-in")).expect("symlink");
    symlink("../outside/nodir/x", root.join("dangling-dir")).expect("symlink");
    symlink("dangling-in", root.join("chain")).expect("symlink");
    symlink("loop", root.join("loop")).expect("symlink");
    assert!(matches!(jail.resolve("dangling-out"), Err(JailError::Outside(..))));
    assert!(jail.open_write("dangling-out").is_err());
    assert!(!outside.join("new.txt").exists(), "nothing is created outside");
    assert!(matches!(jail.resolve("dangling-dir/y"), Err(JailError::Outside(..))));
    assert_eq!(jail.resolve("dangling-in"), Ok(root.join("src/new.txt")));
    assert_eq!(jail.resolve("chain"), Ok(root.join("src/new.txt")));
    assert!(matches!(jail.resolve("loop/x"), Err(JailError::Io { .. })));
}

/// Found probing the `jail` fuzz target with long inputs: a path of many missing names
/// took time quadratic in its length (13 s for 400 KB). Now one walk down finds the
/// existing part; the rest is appended as is.
#[test]
fn a_long_path_of_missing_names_resolves_in_one_walk() {
    let (root, _, jail) = tree();
    let long = "x/".repeat(200_000);
    let resolved = jail.resolve(&long).expect("inside");
    assert!(resolved.starts_with(&root) && resolved.components().count() == root.components().count() + 200_000);
    assert!(matches!(jail.resolve(&format!("{long}../../x/{}", "../".repeat(200_000))), Err(JailError::Outside(..))));
}

#[test]
fn a_file_swapped_for_a_symlink_after_the_check_is_caught_at_open() {
    let (root, outside, jail) = tree();
    // Simulate the race: the check passed for a regular file, then it became a link.
    let resolved = jail.resolve("src/a.txt").expect("inside");
    std::fs::remove_file(&resolved).expect("rm");
    symlink(outside.join("secret.txt"), &resolved).expect("symlink");
    let file = File::open(&resolved).expect("open follows the link");
    assert!(matches!(jail.verify_open(&file, "src/a.txt"), Err(JailError::Outside(..))));
    assert!(jail.open_read("src/a.txt").is_err());
    let _ = root;
}

#[test]
fn opening_after_the_check_never_follows_a_swapped_link() {
    let (root, outside, jail) = tree();
    std::fs::write(outside.join("keep.txt"), "precious").expect("write");
    // The check saw a real directory and file; both become links before the open.
    let file = jail.resolve("src/a.txt").expect("inside");
    std::fs::remove_file(&file).expect("rm");
    symlink(outside.join("keep.txt"), &file).expect("symlink");
    assert_eq!(jail.open_beneath(&file, Open::Create, "src/a.txt").err(), Some(JailError::Swapped("src/a.txt".into())));
    assert_eq!(jail.open_beneath(&file, Open::Read, "src/a.txt").err(), Some(JailError::Swapped("src/a.txt".into())));
    let dir = jail.resolve("src").expect("inside");
    std::fs::remove_file(&file).expect("rm link");
    std::fs::remove_dir(&dir).expect("rmdir");
    symlink(&outside, &dir).expect("symlink");
    assert_eq!(
        jail.open_beneath(&dir.join("keep.txt"), Open::Create, "src/keep.txt").err(),
        Some(JailError::Swapped("src/keep.txt".into()))
    );
    assert!(jail.open_beneath(&dir.join("new.txt"), Open::Create, "src/new.txt").is_err());
    assert!(jail.open_beneath(&dir, Open::Dir, "src").is_err());
    assert_eq!(std::fs::read_to_string(outside.join("keep.txt")).expect("read"), "precious", "never truncated");
    assert!(!outside.join("new.txt").exists(), "nothing created outside");
    // Missing parents are created inside; opening to write changes nothing by itself.
    std::fs::write(root.join("old.txt"), "0123456789").expect("write");
    let (_, f) = jail.open_write("old.txt").expect("open");
    assert_eq!(f.metadata().expect("meta").len(), 10);
    assert!(jail.open_write("deep/er/new.txt").is_ok());
    // A plain file where a directory should be is not mistaken for a swap.
    assert!(matches!(jail.open_write("old.txt/x"), Err(JailError::Io { .. })));
    assert!(root.join("deep/er/new.txt").exists());
    let (_, d) = jail.open_dir(".").expect("root dir");
    assert!(same_dir(&d, &root));
    assert!(!same_dir(&d, &outside));
}

#[test]
fn a_walked_file_opens_in_one_step_and_never_through_a_link() {
    use std::io::Read;
    let (root, outside, jail) = tree();
    let (_, dir) = jail.open_dir(".").expect("root");
    let mut text = String::new();
    jail.open_found(&dir, &root, Path::new("src/a.txt")).expect("plain file").read_to_string(&mut text).expect("read");
    assert_eq!(text, "a");
    // A link where the walk saw a file, or a folder swapped for a link: refused, not followed.
    symlink(outside.join("secret.txt"), root.join("src/link.txt")).expect("symlink");
    assert!(jail.open_found(&dir, &root, Path::new("src/link.txt")).is_err());
    symlink(&outside, root.join("out")).expect("symlink");
    assert!(jail.open_found(&dir, &root, Path::new("out/secret.txt")).is_err());
    assert!(jail.open_found(&dir, &root, Path::new("../outside/secret.txt")).is_err());
    // Forbidden paths inside the roots stay closed.
    std::fs::create_dir_all(root.join("forbidden")).expect("mkdir");
    std::fs::write(root.join("forbidden/key"), "k").expect("write");
    assert!(matches!(jail.open_found(&dir, &root, Path::new("forbidden/key")), Err(JailError::Forbidden(..))));
}

#[test]
fn remove_file_deletes_inside_only_and_never_a_directory() {
    let (root, outside, jail) = tree();
    assert!(matches!(jail.remove_file("../outside/secret.txt"), Err(JailError::Outside(..))));
    assert!(outside.join("secret.txt").exists());
    assert!(matches!(jail.remove_file("src"), Err(JailError::Io { .. })));
    assert!(root.join("src").is_dir());
    // A link on the way that leads out is followed to where it leads, and refused there.
    symlink(&outside, root.join("link")).expect("symlink");
    assert!(jail.remove_file("link/secret.txt").is_err());
    assert!(outside.join("secret.txt").exists());
    assert_eq!(jail.remove_file("src/a.txt"), Ok(root.join("src/a.txt")));
    assert!(!root.join("src/a.txt").exists());
    assert!(jail.remove_file("src/a.txt").is_err(), "a missing file is an error");
}
