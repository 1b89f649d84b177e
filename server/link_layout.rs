//! The code layout of the release links, shared by server/build.rs (the binary) and
//! node-addon/build.rs (the addon): the functions a session runs (`symbol-order.txt`, made by
//! scripts/symbol-order.mjs), laid out together at the start of the code.

use std::collections::BTreeSet;
use std::path::Path;

/// The linker arguments that lay out the functions named in `list`, reading files written to
/// `out` (OUT_DIR). Only for LLD, which reads the list and skips names that no longer exist:
/// a stale list costs memory, never a build.
pub fn link_args(list: &Path, out: &Path) -> Vec<String> {
    // The linker reads copies in OUT_DIR: cargo reuses a build script's output when the
    // checkout moves (its hashes do not depend on where the workspace is), and a path into the
    // old checkout would then fail the link. OUT_DIR moves only with the target dir.
    let text = std::fs::read_to_string(list).expect("symbol-order.txt is readable");
    let order = out.join("symbol-order.txt");
    std::fs::write(&order, &text).expect("OUT_DIR is writable");
    let script = out.join("session-locals.ld");
    std::fs::write(&script, locals_script(&text)).expect("OUT_DIR is writable");
    vec![
        format!("-Wl,--symbol-ordering-file={}", order.display()),
        "-Wl,--no-warn-symbol-ordering".into(),
        format!("-Wl,-T,{}", script.display()),
    ]
}

/// A linker script that puts the listed functions whose names end in a counter (`.N`) before
/// the rest of the code, whatever their counter is now.
///
/// Fat LTO merges every crate into one module, and the local copies of one generic function
/// that several crates instantiated (`<String as fmt::Write>::write_str`, channel wakers) get
/// one name plus a counter. The counters shift with any change to the code: two changed lines
/// left 151 of the list's 202 such names stale, and those functions, called from everywhere,
/// scattered back over the binary (+1.3 MB resident after `initialize`). Their input sections
/// are matched here by the name without the counter. `INSERT BEFORE` keeps LLD's default
/// layout for everything else; the symbol list still orders the rest at the start of `.text`.
fn locals_script(list: &str) -> String {
    let bases: BTreeSet<&str> = list
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(without_counter)
        // A glob character would change what the pattern means (mangled names have none).
        .filter(|base| !base.contains(['*', '?', '[', ']', '\\', ' ', '(', ')']))
        .collect();
    let mut script = String::from("SECTIONS\n{\n  .text.session_locals : {\n");
    for base in bases {
        script.push_str(&format!("    *(.text.{base}.* .text.unlikely.{base}.*)\n"));
    }
    script.push_str("  }\n}\nINSERT BEFORE .text;\n");
    script
}

/// `name` without a trailing `.N`, if it has one.
fn without_counter(name: &str) -> Option<&str> {
    let (base, counter) = name.rsplit_once('.')?;
    (!base.is_empty() && !counter.is_empty() && counter.bytes().all(|b| b.is_ascii_digit())).then_some(base)
}
