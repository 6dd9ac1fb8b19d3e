//! Links the crate against liboctet.
//!
//! The library is looked for in `OCTET_LIB_DIR` when it is set, else in
//! `../../build/lib` relative to this crate (the repository's build tree,
//! where `cmake --build build --target octet` puts `liboctet.so`). The same
//! directory is written as an rpath into the crate's tests, examples and
//! binaries, so `cargo test` and `cargo run --example` find the library
//! without `LD_LIBRARY_PATH`. Cargo passes that rpath to this package's own
//! targets only: a program that depends on this crate needs its own rpath
//! (or `LD_LIBRARY_PATH`) to liboctet's folder.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=OCTET_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let dir = match env::var_os("OCTET_LIB_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => manifest.join("../../build/lib"),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    if !dir.join("liboctet.so").exists() && !dir.join("liboctet.dylib").exists() {
        println!(
            "cargo:warning=no liboctet in {}: build it (cmake --build build --target octet) \
             or set OCTET_LIB_DIR to the folder that holds it",
            dir.display()
        );
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=octet");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    // For tests that build C programs against the same library.
    println!("cargo:rustc-env=OCTET_LINKED_LIB_DIR={}", dir.display());
}
