//! Link options for the `corvid` binary.

#[path = "link_layout.rs"]
mod link_layout;

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
    // (the whole process, stop 31's measurement). Only for the target whose default linker is
    // LLD (rustc's since 1.90); see link_layout.rs.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    if os == "linux" && env == "gnu" && arch == "x86_64" {
        println!("cargo:rerun-if-changed=symbol-order.txt");
        println!("cargo:rerun-if-changed=link_layout.rs");
        for arg in link_layout::link_args(std::path::Path::new("symbol-order.txt"), &out) {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
    // Start-up time. Rust's standard library unwinds panics with libgcc_s, a shared library
    // whose constructor asks the CPU for its features (`cpuid`), and under a hypervisor every
    // `cpuid` is a trip out of the guest: loading it cost 0.35 ms of every start on our CI
    // machine (`true` with libgcc_s preloaded: 2.00 → 2.35 ms). The same unwinder is linked
    // in statically instead: the linker looks for `-lgcc_s` in this folder first and finds
    // GCC's static unwinder (libgcc_eh.a) under that name. Panics unwind as before (the faults
    // e2e test panics inside a turn). Skipped when the C compiler has no libgcc_eh.a.
    if os == "linux"
        && env == "gnu"
        && let Some(unwinder) = static_unwinder()
    {
        let dir = out.join("static-unwinder");
        std::fs::create_dir_all(&dir).expect("OUT_DIR is writable");
        std::fs::copy(&unwinder, dir.join("libgcc_s.a")).expect("libgcc_eh.a is readable");
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
}

/// Where the C compiler keeps GCC's static unwinder, if it has one.
fn static_unwinder() -> Option<std::path::PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let found = std::process::Command::new(cc).arg("-print-file-name=libgcc_eh.a").output().ok()?;
    // Without the file, the compiler prints the name back as it was given.
    let path = std::path::PathBuf::from(String::from_utf8(found.stdout).ok()?.trim());
    (path.is_absolute() && path.is_file()).then_some(path)
}
