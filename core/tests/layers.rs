//! Which way imports go between corvid-core's top-level modules (ARCHITECTURE.md, "Layers
//! inside corvid-core"), checked on the source: each module below may name only the modules it
//! is allowed (`crate::<module>` in code, not in comments or test modules), and the ones marked
//! protocol-free never name the ACP schema crate. A new edge that breaks a layer fails here
//! with the file and line, so the table stays true.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Module → the crate modules its non-test code may import (`http_client*` are the crate root's
/// HTTP client functions). Only `agent`, the top, is not checked; `config`, `catalog` and
/// `sandbox` share settings both ways.
const ALLOWED: &[(&str, &[&str])] = &[
    ("transport", &[]),
    ("rpc", &["transport"]),
    ("roots", &[]),
    ("store", &[]),
    ("process", &[]),
    ("provider", &[]),
    ("uploads", &["tools"]),
    ("event", &["store"]),
    ("editor", &["rpc", "event"]),
    ("catalog", &["config", "provider"]),
    ("config", &["catalog", "provider", "transport"]),
    ("config_file", &["config"]),
    ("login", &["config", "config_file", "provider"]),
    ("sandbox", &["config", "process", "roots"]),
    ("tools", &["editor", "event", "http_client_builder", "process", "provider", "roots", "sandbox"]),
    ("mcp", &["event", "process", "provider", "sandbox", "tools", "uploads"]),
];

/// Modules that know no ACP: they never name the schema crate.
const PROTOCOL_FREE: &[&str] = &[
    "transport",
    "rpc",
    "roots",
    "store",
    "process",
    "provider",
    "uploads",
    "catalog",
    "config",
    "config_file",
    "login",
    "sandbox",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its test modules: everything from the
/// first `#[cfg(test)]` on (test modules sit at the end of a file here), and none of a file
/// named `tests.rs`.
fn code_lines(path: &Path, text: &str) -> Vec<(usize, String)> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        if !code.trim().is_empty() {
            out.push((i + 1, code.to_string()));
        }
    }
    out
}

/// The crate modules a line names: `crate::x` and each head of `use crate::{x, y::z}`.
fn named_modules(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let head: String = part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !head.is_empty() {
                    found.push(head);
                }
            }
        } else {
            let head: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !head.is_empty() {
                found.push(head);
            }
        }
    }
    found
}

#[test]
fn imports_between_top_level_modules_follow_the_layer_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 50, "found only {} source files under {}", files.len(), src.display());
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut faults = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap_or(file);
        let top = relative.components().next().and_then(|c| c.as_os_str().to_str()).unwrap_or_default();
        let module = top.trim_end_matches(".rs");
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let checked = allowed.get(module);
        for (line_no, code) in code_lines(file, &text) {
            if let Some(allowed) = checked {
                for named in named_modules(&code) {
                    if named != module && !allowed.contains(&named.as_str()) {
                        faults.push(format!("{}:{line_no}: `{module}` imports `{named}`", relative.display()));
                    }
                }
            }
            if PROTOCOL_FREE.contains(&module) && code.contains("agent_client_protocol_schema") {
                faults.push(format!("{}:{line_no}: `{module}` names the ACP schema crate", relative.display()));
            }
        }
    }
    assert!(faults.is_empty(), "imports against the layer table:\n{}", faults.join("\n"));
}

#[test]
fn the_checker_sees_the_imports_it_checks() {
    assert_eq!(named_modules("use crate::{tools::Jail, rpc, event::v2};"), ["tools", "rpc", "event"]);
    assert_eq!(named_modules("let x = crate::agent::prompt::f(crate::uploads::MAX_BYTES);"), ["agent", "uploads"]);
    let code = code_lines(Path::new("a.rs"), "use crate::a; // crate::b\n#[cfg(test)]\nuse crate::c;");
    assert_eq!(code.len(), 1);
    assert_eq!(named_modules(&code[0].1), ["a"]);
}
