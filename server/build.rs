//! Link options for the `corvid` binary.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Start-up time. Editors spawn `corvid acp` for every chat, and a position-independent
    // executable makes the loader apply ~37,000 relocations (vtables, string tables) before
    // `main`: copy-on-write faults on ~170 pages on every start. Linked at a fixed address the
    // image needs none (`corvid --version`: 3.1 → 1.7 ms, 300 → 128 page faults). The code is
    // compiled position-independent as usual, so the addon's shared library is unaffected
    // and nothing is compiled twice. What is given up is address randomization of the
    // executable's own image (the heap, stacks and shared libraries stay randomized), a
    // hardening layer against memory-corruption bugs: our code is safe Rust with `unsafe`
    // denied; the C in the process is SQLite's and ring's.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    // Memory and start-up time. The kernel maps code 64 KB at a time around each page that is
    // touched, and the functions a session runs (about a quarter of the code) were spread over
    // most of the binary: after `initialize` the process had 14.5 MB resident. Laid out together, in
    // the order they first run (`symbol-order.txt`, made by scripts/symbol-order.mjs), 7.1 MB
    // (the whole process, stop 31's measurement). Only for
    // the target whose default linker is LLD (rustc's since 1.90), which reads the file and
    // skips names that no longer exist: a stale list costs memory, never a build.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os == "linux" && env == "gnu" && arch == "x86_64" {
        // The linker reads a copy in OUT_DIR: cargo reuses a build script's output when the
        // checkout moves (its hashes do not depend on where the workspace is), and a path into
        // the old checkout would then fail the link. OUT_DIR moves only with the target dir.
        println!("cargo:rerun-if-changed=symbol-order.txt");
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let order = out.join("symbol-order.txt");
        std::fs::copy("symbol-order.txt", &order).expect("server/symbol-order.txt is readable");
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
