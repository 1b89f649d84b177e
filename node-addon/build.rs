//! Link options for the addon.

fn main() {
    napi_build::setup();
    // Memory in the editor's extension host: the kernel maps a library's code 64 KB at a time
    // around each page that is touched, so code that runs together should lie together. The
    // addon runs the core's code, the same functions as `corvid acp` (same compiled crates, so
    // mostly the same symbol names), so it takes the binary's list (server/build.rs, made by
    // scripts/symbol-order.mjs); names that only the binary has are skipped by the linker.
    // Read from a copy in OUT_DIR for the reason server/build.rs gives.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let list = "../server/symbol-order.txt";
    // Without the list (the crate built outside this workspace) the addon is linked as is.
    if os == "linux" && env == "gnu" && arch == "x86_64" && std::path::Path::new(list).exists() {
        println!("cargo:rerun-if-changed={list}");
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let order = out.join("symbol-order.txt");
        std::fs::copy(list, &order).expect("server/symbol-order.txt is readable");
        println!("cargo:rustc-link-arg-cdylib=-Wl,--symbol-ordering-file={}", order.display());
        println!("cargo:rustc-link-arg-cdylib=-Wl,--no-warn-symbol-ordering");
    }
}
