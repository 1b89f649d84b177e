//! Resolving a tool's path: lexical normalization, then canonicalization of the longest
//! existing prefix (links followed by hand where `canonicalize` cannot), then the check
//! against the roots and forbidden paths.

use std::path::{Component, Path, PathBuf};

use super::{Jail, JailError};

/// Links followed by hand while resolving one path (Linux's own limit).
const MAX_LINKS: usize = 40;

impl Jail {
    /// Resolves `path` (absolute, or relative to the cwd) to a canonical path inside the roots.
    /// The file itself need not exist (for writes); its nearest existing ancestor is resolved.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, JailError> {
        if path.contains('\0') {
            return Err(JailError::Nul);
        }
        let joined = if Path::new(path).is_absolute() { PathBuf::from(path) } else { self.cwd().join(path) };
        let mut pending = normalize(&joined).ok_or_else(|| self.outside(path))?;
        let mut links = 0;
        // Canonicalize the longest existing prefix; the rest names nothing that exists, so it
        // cannot contain links. A link that canonicalization cannot follow (dangling, or a
        // loop) is followed here: left in the path, writing through it would create its target
        // wherever that is.
        'resolve: loop {
            // The existing part ends at the first name that is missing (links not followed),
            // found walking down from the root: popping names off the end instead costs a
            // canonicalization of the whole path per name, quadratic in a long path of missing
            // names (a 400 KB path took 13 s). `rest` holds the other names, last first.
            // The root (`/`, or `C:\` with its prefix) is taken as it is: on Windows a prefix
            // alone names no file (`\\?\C:` fails every metadata call), which made every path
            // count as outside the roots.
            let mut existing = PathBuf::new();
            let mut rest = Vec::new();
            let mut components = pending.components();
            while let Some(component) = components.next() {
                existing.push(component);
                if matches!(component, Component::Normal(_)) && std::fs::symlink_metadata(&existing).is_err() {
                    existing.pop();
                    rest.extend(components.by_ref().rev().map(|c| c.as_os_str().to_owned()));
                    rest.push(component.as_os_str().to_owned());
                    break;
                }
            }
            let canonical = loop {
                match dunce::canonicalize(&existing) {
                    Ok(c) => break c,
                    Err(_) => {
                        if let Ok(target) = std::fs::read_link(&existing) {
                            links += 1;
                            if links > MAX_LINKS {
                                return Err(JailError::Io {
                                    path: path.to_string(),
                                    reason: "too many levels of symbolic links".into(),
                                });
                            }
                            // The link exists, so its folder does and canonicalizes.
                            let dir = existing.parent().unwrap_or(Path::new("/"));
                            let mut next = dunce::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()).join(target);
                            next.extend(rest.iter().rev());
                            pending = normalize(&next).ok_or_else(|| self.outside(path))?;
                            continue 'resolve;
                        }
                        let Some(name) = existing.file_name().map(|n| n.to_owned()) else {
                            return Err(self.outside(path));
                        };
                        rest.push(name);
                        if !existing.pop() {
                            return Err(self.outside(path));
                        }
                    }
                }
            };
            let mut full = canonical;
            full.extend(rest.iter().rev());
            self.check(&full, path)?;
            return Ok(full);
        }
    }
}

/// Lexical normalization: drops `.`, applies `..`. `None` if `..` climbs above `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}
