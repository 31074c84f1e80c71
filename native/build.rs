//! Builds the NVTX injection library (`nvtx/`, a cdylib) with the same cargo into `OUT_DIR`, so
//! `src/record/nvtx.rs` can embed its bytes: the one `flinch-trace` binary, however it was built
//! or installed (`cargo build -p flinch-trace`, `cargo install --path native`), carries the
//! library `record` injects (docs/nvtx.md). Stable cargo cannot depend on a cdylib artifact, hence
//! a nested cargo run, in a target folder of its own (no lock shared with the outer build).
//!
//! When the library cannot be built (not Linux, the `nvtx/` sources absent, the nested build
//! failing), an empty file is embedded with a cargo warning, and `record` falls back to a
//! library beside the binary.
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let embedded = out.join("libflinch_nvtx.so");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let nvtx = manifest_dir.join("../nvtx");
    println!("cargo:rerun-if-changed=../nvtx/src");
    println!("cargo:rerun-if-changed=../nvtx/Cargo.toml");
    // The library writes flinch-core's marks line.
    println!("cargo:rerun-if-changed=../core/src/marks_line.rs");
    println!("cargo:rerun-if-changed=../Cargo.lock");
    println!("cargo:rerun-if-env-changed=FLINCH_NVTX_EMBED");
    let built = match why_not(&nvtx) {
        Some(why) => Err(why),
        None => build(&nvtx, &out),
    };
    match built {
        Ok(lib) => {
            std::fs::copy(&lib, &embedded).expect("copy the NVTX library into OUT_DIR");
        }
        Err(why) => {
            println!(
                "cargo:warning=flinch-trace: the NVTX library is not embedded ({why}); `record` will look for libflinch_nvtx.so beside the binary"
            );
            std::fs::write(&embedded, b"").expect("write OUT_DIR");
        }
    }
}

/// Why the library is not built here, if it is not.
fn why_not(nvtx: &Path) -> Option<String> {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return Some("the target is not Linux".into());
    }
    if std::env::var("FLINCH_NVTX_EMBED").as_deref() == Ok("0") {
        return Some("FLINCH_NVTX_EMBED=0".into());
    }
    if !nvtx.join("Cargo.toml").is_file() {
        return Some(format!("no NVTX sources at {}", nvtx.display()));
    }
    None
}

/// `cargo build -p flinch-nvtx` for this target and profile into `OUT_DIR/nvtx-target`; the
/// library's path.
fn build(nvtx: &Path, out: &Path) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = std::env::var("TARGET").map_err(|e| format!("TARGET: {e}"))?;
    let host = std::env::var("HOST").map_err(|e| format!("HOST: {e}"))?;
    // The outer build's profile: release code for a release binary, quick builds otherwise.
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    let target_dir = out.join("nvtx-target");
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(nvtx.join("Cargo.toml"))
        .args(["-p", "flinch-nvtx", "--lib", "--offline"])
        .arg("--target-dir")
        .arg(&target_dir);
    if release {
        // Embedded bytes: the library's code without its debug information (about 10x smaller).
        cmd.arg("--release")
            .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
            .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo");
    }
    if target != host {
        cmd.args(["--target", &target]);
    }
    // What the outer cargo set for this build script is not the nested build's business.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k == "CARGO_TARGET_DIR"
            || k == "CARGO_BUILD_TARGET_DIR"
            || k.starts_with("CARGO_FEATURE_")
        {
            cmd.env_remove(&k);
        }
    }
    // Its progress goes to the build log; this script's stdout is read by cargo as directives.
    let status = cmd
        .stdout(std::io::stderr())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "the nested `cargo build -p flinch-nvtx` failed ({status})"
        ));
    }
    let mut dir = target_dir;
    if target != host {
        dir.push(&target);
    }
    dir.push(if release { "release" } else { "debug" });
    let lib = dir.join("libflinch_nvtx.so");
    if lib.is_file() {
        Ok(lib)
    } else {
        Err(format!("the nested build left no {}", lib.display()))
    }
}
