//! Whole-array writes on a small file system that fills up: a write larger than the room left
//! is an error naming the full disk, never a `SIGBUS` from the map a large write copies part of
//! its bytes through (src/mapwrite.rs reserves the blocks with `fallocate` first), leaves no
//! temporary file and keeps the file it would have replaced; a write that fits takes the map
//! and reads back equal.
//!
//! It needs a loop-mounted ext4 image: root, `mkfs.ext4` and loop devices. Where any is
//! missing it says so on its output and checks nothing (CI's machine has them).

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

use rawarray_serde::RawArray;

/// An ext4 file system of `mib` MiB in an image file, mounted on a folder; unmounted when
/// dropped.
struct Mounted {
    dir: PathBuf,
    _scratch: tempfile::TempDir,
}

impl Mounted {
    fn new(mib: u64) -> Result<Mounted, String> {
        let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
        let image = scratch.path().join("fs.img");
        let dir = scratch.path().join("mnt");
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(mib << 20))
            .map_err(|e| e.to_string())?;
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image))?;
        run(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&image)
            .arg(&dir))?;
        Ok(Mounted {
            dir,
            _scratch: scratch,
        })
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn array(mib: usize, seed: f32) -> RawArray<f32> {
    RawArray::from_vec(
        (0..mib << 18)
            .map(|k| k as f32 + seed)
            .collect::<Vec<f32>>(),
    )
}

#[test]
fn a_full_disk_is_an_error_never_a_signal_and_costs_no_file() {
    let fs = match Mounted::new(100) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("skipped: no loop-mounted ext4 here ({why})");
            return;
        }
    };
    let dir = &fs.dir;
    // 100 MiB of file system leaves about 80 MiB for files: 72 MiB fits, through the map
    // (64 MiB or more) where the machine has two cores.
    let path = dir.join("field.ra");
    let fits = array(72, 0.0);
    fits.write_file(&path).unwrap();
    let back: RawArray<f32> = RawArray::read_file(&path).unwrap();
    assert!(back.as_slice() == fits.as_slice(), "72 MiB read back");
    // Over it, 96 MiB cannot fit (the old file holds its blocks until the rename): an error
    // that says the disk is full, the old file kept, no temporary file left.
    let e = array(96, 1.0).write_file(&path).unwrap_err();
    assert!(
        e.to_string().contains("No space left on device") && e.to_string().contains("field.ra"),
        "not a full disk, or not naming the file: {e}"
    );
    let back: RawArray<f32> = RawArray::read_file(&path).unwrap();
    assert!(back.as_slice() == fits.as_slice(), "the old file kept");
    assert_eq!(names(dir), ["field.ra", "lost+found"]);
    // A new file that cannot fit either: an error, and nothing at its path.
    let other = dir.join("other.ra");
    let e = array(64, 2.0).write_file(&other).unwrap_err();
    assert!(
        e.to_string().contains("No space left on device"),
        "not a full disk: {e}"
    );
    assert_eq!(names(dir), ["field.ra", "lost+found"]);
}
