use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{Target, write_all};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("flinch-output-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every entry of `d`, sorted.
fn entries(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn the_same_path_a_hard_link_and_a_symbolic_link_to_an_input_are_refused() {
    let d = dir("same");
    let input = d.join("rec.csv");
    std::fs::write(&input, "x\n").unwrap();
    std::fs::hard_link(&input, d.join("hard.json")).unwrap();
    std::os::unix::fs::symlink(&input, d.join("soft.json")).unwrap();
    for out in ["rec.csv", "hard.json", "soft.json"] {
        let t = Target::resolve("--perfetto", &d.join(out)).unwrap();
        let e = t.refuse_input("the --telemetry input", &input).unwrap_err();
        assert!(
            e.contains("is the same file as the --telemetry input")
                && e.ends_with("refusing to overwrite an input"),
            "{e}"
        );
    }
    // A file with the same content is another file.
    std::fs::write(d.join("copy.json"), "x\n").unwrap();
    let t = Target::resolve("--perfetto", &d.join("copy.json")).unwrap();
    t.refuse_input("the --telemetry input", &input).unwrap();
    assert_eq!(std::fs::read(&input).unwrap(), b"x\n");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn folders_fifos_and_missing_folders_are_refused_and_devices_written_directly() {
    let d = dir("kinds");
    let e = Target::resolve("--out", &d).unwrap_err();
    assert!(e.contains("is a directory"), "{e}");
    let fifo = d.join("f");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = Target::resolve("--out", &fifo).unwrap_err();
    assert!(e.contains("is a FIFO"), "{e}");
    let e = Target::resolve("--out", &d.join("no/such/out.json")).unwrap_err();
    assert!(e.contains("no/such"), "{e}");
    std::os::unix::fs::symlink(d.join("gone"), d.join("dangling")).unwrap();
    let e = Target::resolve("--out", &d.join("dangling")).unwrap_err();
    assert!(e.contains("does not exist"), "{e}");
    write_all(
        Target::resolve("--out", Path::new("/dev/null")).unwrap(),
        b"ok",
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_committed_file_replaces_the_target_with_its_mode_and_leaves_no_temporary_file() {
    let d = dir("commit");
    let out = d.join("out.json");
    std::fs::write(&out, "old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    let mut f = Target::resolve("--out", &out).unwrap().create().unwrap();
    f.write_all(b"new").unwrap();
    // Until the commit, the target is the old file, and the new one is beside it.
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    let names = entries(&d);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names[0].starts_with(".out.json.flinch-") && names[0].ends_with(".tmp"),
        "{names:?}"
    );
    f.commit().unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"new");
    let mode = std::fs::metadata(&out).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640);
    assert_eq!(entries(&d), ["out.json"]);
    // Through a symbolic link: the file it points to is replaced, the link stays.
    std::os::unix::fs::symlink(&out, d.join("link.json")).unwrap();
    write_all(
        Target::resolve("--out", &d.join("link.json")).unwrap(),
        b"via link",
    )
    .unwrap();
    assert!(
        std::fs::symlink_metadata(d.join("link.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"via link");
    assert_eq!(entries(&d), ["link.json", "out.json"]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_uncommitted_file_is_removed_and_the_target_left_as_it_was() {
    let d = dir("drop");
    let out = d.join("out.json");
    let mut f = Target::resolve("--out", &out).unwrap().create().unwrap();
    f.write_all(b"half").unwrap();
    drop(f);
    assert!(entries(&d).is_empty(), "{:?}", entries(&d));
    std::fs::write(&out, "kept").unwrap();
    let mut f = Target::resolve("--out", &out).unwrap().create().unwrap();
    f.write_all(b"half").unwrap();
    drop(f);
    assert_eq!(entries(&d), ["out.json"]);
    assert_eq!(std::fs::read(&out).unwrap(), b"kept");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn write_errors_name_the_output_and_the_os_error() {
    let d = dir("message");
    let out = d.join("new.json");
    let t = Target::resolve("--out", &out).unwrap();
    let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
    let msg = t.name().write_error(&e);
    let want = format!(
        "--out {}: cannot write: No space left on device",
        out.display()
    );
    assert!(
        msg.starts_with(&want) && msg.contains("was not created"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
