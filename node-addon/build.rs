//! Link options for the addon.

#[path = "../server/link_layout.rs"]
mod link_layout;

fn main() {
    napi_build::setup();
    // Memory in the editor's extension host: the kernel maps a library's code 64 KB at a time
    // around each page that is touched, so code that runs together should lie together. The
    // addon runs the core's code, the same functions as `corvid acp` (same compiled crates, so
    // mostly the same symbol names), so it takes the binary's list (server/build.rs, made by
    // scripts/symbol-order.mjs); names that only the binary has are skipped by the linker.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let list = "../server/symbol-order.txt";
    // Without the list the addon is linked as is.
    if os == "linux" && env == "gnu" && arch == "x86_64" && std::path::Path::new(list).exists() {
        println!("cargo:rerun-if-changed={list}");
        println!("cargo:rerun-if-changed=../server/link_layout.rs");
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        for arg in link_layout::link_args(std::path::Path::new(list), &out) {
            println!("cargo:rustc-link-arg-cdylib={arg}");
        }
    }
}
