//! `record --torch-profile` around commands that are not PyTorch training: usage errors, the one
//! warning for a command that is not Python or a Python without torch (the recording goes on), the
//! `sitecustomize` chaining (an existing one still runs, once), and removal of a cut export's
//! temporary file. With a real PyTorch (`$FLINCH_TORCH_ENV`, default `target/torch-env`) the last
//! test runs `tests/torch/record_profile.sh`; without one it says loudly that it skipped.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{bin, repo, tmpdir};

/// One GPU, constant (the GPU does not matter here).
const SCRIPT: &str = "gpus 1\n100,50,10,1500,50,1000,100,0\n";

fn record(dir: &Path, extra: &[&str], cmd: &[&str]) -> Output {
    let gpu = dir.join("gpu.txt");
    std::fs::write(&gpu, SCRIPT).unwrap();
    bin()
        .arg("record")
        .arg("--scripted-gpu")
        .arg(&gpu)
        .args(["--no-rapl", "--no-nvtx", "--interval-ms", "5", "--out"])
        .arg(dir.join("trace.csv"))
        .args(extra)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn python3() -> Option<PathBuf> {
    let p = std::env::var_os("PATH")?;
    std::env::split_paths(&p)
        .map(|d| d.join("python3"))
        .find(|c| {
            Command::new(c)
                .arg("-c")
                .arg("pass")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[test]
fn a_bad_schedule_or_no_command_is_a_usage_error() {
    let dir = tmpdir("usage");
    for (args, says) in [
        (
            vec!["--torch-profile=5,2", "--", "true"],
            "wait,warmup,active[,repeat]",
        ),
        (vec!["--torch-profile=1,1,0", "--", "true"], "active is 0"),
        (vec!["--torch-profile", "--seconds", "1"], "needs a command"),
        (vec!["--no-report", "--", "true"], "--torch-profile"),
    ] {
        let o = bin()
            .arg("record")
            .arg("--out")
            .arg(dir.join("t.csv"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    assert!(!dir.join("t.csv").exists());
}

#[test]
fn a_command_that_is_not_python_gets_one_warning_and_a_normal_recording() {
    let dir = tmpdir("not-python");
    // A cut export's temporary file (a process killed while writing) is removed at the end.
    let partial = dir.join(".trace.torch.json.gz.tmp4242.json.gz");
    std::fs::write(&partial, b"\x1f\x8b half").unwrap();
    let o = record(
        &dir,
        &["--torch-profile"],
        &["sh", "-c", "sleep 0.05; exit 4"],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("--torch-profile"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("the command started no Python")
            && warnings[0].ends_with("the recording goes on"),
        "{err}"
    );
    let csv = std::fs::read_to_string(dir.join("trace.csv")).unwrap();
    assert!(
        csv.contains(",SAMPLE,") && csv.contains("MARK,cmd_end"),
        "{csv}"
    );
    let meta = std::fs::read_to_string(dir.join("trace.csv.meta.json")).unwrap();
    assert!(
        meta.contains("started no Python"),
        "the warning is in the sidecar: {meta}"
    );
    assert!(!partial.exists());
    assert!(o.stdout.is_empty(), "no report without a trace");
}

#[test]
fn an_existing_sitecustomize_still_runs_once_and_python_without_torch_is_one_warning() {
    let Some(py) = python3() else {
        eprintln!("SKIPPED: no python3 on PATH; the sitecustomize chaining is not tested");
        return;
    };
    let dir = tmpdir("chain");
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    let ran = dir.join("ran.txt");
    std::fs::write(
        site.join("sitecustomize.py"),
        format!(
            "open({:?}, 'a').write('ran\\n')\nMARK = 'theirs'\n",
            ran.display().to_string()
        ),
    )
    .unwrap();
    let probe = "import sitecustomize, sys, os; \
                 print(sitecustomize.MARK, os.environ['PYTHONPATH'].split(':')[1:], \
                 '_flinch_torch_profile' in sys.modules, 'torch' in sys.modules)";
    let gpu = dir.join("gpu.txt");
    std::fs::write(&gpu, SCRIPT).unwrap();
    let o = bin()
        .arg("record")
        .arg("--scripted-gpu")
        .arg(&gpu)
        .args(["--no-rapl", "--no-nvtx", "--torch-profile", "--out"])
        .arg(dir.join("trace.csv"))
        .arg("--")
        .arg(&py)
        .args(["-c", probe])
        .env("PYTHONPATH", &site)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    // The shadowed sitecustomize ran as `sitecustomize`, after the bootstrap armed itself; the
    // program's own PYTHONPATH follows the private folder; nothing imported torch for it.
    assert_eq!(
        out.trim(),
        format!("theirs ['{}'] True False", site.display()),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
    let err = stderr(&o);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("--torch-profile"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("1 Python process(es) ran, none imported torch"),
        "{err}"
    );
}

#[test]
fn real_pytorch_record_profile_script() {
    let env = std::env::var_os("FLINCH_TORCH_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/torch-env"));
    if !env.join("bin/python").is_file() {
        eprintln!(
            "SKIPPED: no PyTorch environment at {} (scripts/dev/torch-env.sh makes it; or set \
             FLINCH_TORCH_ENV): tests/torch/record_profile.sh did not run",
            env.display()
        );
        return;
    }
    let mut cmd = Command::new(repo().join("tests/torch/record_profile.sh"));
    cmd.env("FLINCH_BIN", env!("CARGO_BIN_EXE_flinch-trace"))
        .env("FLINCH_TORCH_ENV", &env);
    // The Python API part needs the extension `cargo build -p flinch-py` makes beside the binary.
    let native = Path::new(env!("CARGO_BIN_EXE_flinch-trace")).with_file_name("lib_native.so");
    if !native.is_file() && std::env::var_os("FLINCH_PY_NATIVE").is_none() {
        eprintln!(
            "SKIPPED: part 7 of tests/torch/record_profile.sh (flinch_trace.profile): no {} \
             (cargo build -p flinch-py)",
            native.display()
        );
        cmd.env("FLINCH_TORCH_ALLOW_NO_PY", "1");
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
}
