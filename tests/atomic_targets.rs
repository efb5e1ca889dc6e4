//! Atomic writes respect what is at the destination (issue 14, case 7): symlinks are followed
//! by every writer, special files, hard links, read-only and other owners' files are refused
//! (each with its own error kind), owners and modes are kept without ever carrying setuid to
//! another owner, errors name the destination, and temporary files are recognisable. Every
//! target is made in a temporary folder; the other-owner case needs root and is compiled as
//! ignored, with that reason, for other users (`cfg(not_root)`, from the build script).
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use rawarray_serde::atomic::{AtomicFile, AtomicOptions};
use rawarray_serde::{DynArray, ErrorKind, RawArray, RecordOptions, RecordWriter};

fn array(v: u32) -> RawArray<u32> {
    RawArray::from_vec(vec![v, v + 1])
}

fn read_u32s(path: &Path) -> Vec<u32> {
    RawArray::<u32>::read_file(path).unwrap().into_vec()
}

/// A FIFO at `path`, through `mkfifo(1)` (coreutils, on every Linux these tests run on).
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status();
    assert!(
        status.as_ref().is_ok_and(std::process::ExitStatus::success),
        "mkfifo {} failed: {status:?}",
        path.display()
    );
}

#[test]
fn a_symlink_is_followed_by_every_writer_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let (file, link) = (dir.path().join("data.ra"), dir.path().join("link.ra"));
    array(1).write_file(&file).unwrap();
    std::os::unix::fs::symlink("data.ra", &link).unwrap();

    array(10).write_file(&link).unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(read_u32s(&file), [10, 11]);

    DynArray::from_typed(&array(20)).write_file(&link).unwrap();
    rawarray_serde::to_file(&link, &[30u32, 31]).unwrap();
    assert_eq!(read_u32s(&file), [30, 31]);

    // The record writer: created through the link, reopened through it, the link kept.
    let mut w: RecordWriter<u32> = RecordOptions::new().create(&link).unwrap();
    w.append(&40).unwrap();
    w.finish().unwrap();
    let mut w: RecordWriter<u32> = RecordOptions::new().open(&link).unwrap();
    w.append(&41).unwrap();
    w.finish().unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(read_u32s(&file), [40, 41]);

    // A dangling link: the file it names is created.
    let (missing, dangling) = (dir.path().join("sub-missing.ra"), dir.path().join("d.ra"));
    std::os::unix::fs::symlink(&missing, &dangling).unwrap();
    array(50).write_file(&dangling).unwrap();
    assert_eq!(read_u32s(&missing), [50, 51]);
    assert!(fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_fifo_is_refused_by_every_writer_and_left_a_fifo() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.ra");
    mkfifo(&fifo);
    let link = dir.path().join("to-pipe.ra");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    for target in [&fifo, &link] {
        let errors = [
            array(1).write_file(target).unwrap_err(),
            rawarray_serde::to_file(target, &1u8).unwrap_err(),
            AtomicFile::create(target).unwrap_err(),
            // Neither may block opening it.
            RecordOptions::new().create::<u32>(target).unwrap_err(),
            RecordOptions::new().open::<u32>(target).unwrap_err(),
            rawarray_serde::recover(target).unwrap_err(),
        ];
        for e in errors {
            assert!(
                matches!(e.kind(), ErrorKind::NotRegularFile { path, what: "FIFO" } if path == target),
                "{e}"
            );
            assert!(
                e.to_string().contains("is a FIFO, not a regular file"),
                "{e}"
            );
        }
    }
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temporary file"
    );
}

#[test]
fn a_socket_and_a_folder_are_refused_too() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("sock.ra");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let folder = dir.path().join("folder.ra");
    fs::create_dir(&folder).unwrap();
    for (target, kind) in [(&sock, "socket"), (&folder, "folder")] {
        for e in [
            array(1).write_file(target).unwrap_err(),
            RecordOptions::new().create::<u32>(target).unwrap_err(),
            RecordOptions::new().open::<u32>(target).unwrap_err(),
        ] {
            assert!(
                matches!(e.kind(), ErrorKind::NotRegularFile { what, .. } if *what == kind),
                "{e}"
            );
        }
    }
    assert!(fs::metadata(&folder).unwrap().is_dir());
}

#[test]
fn a_hard_linked_file_is_not_split_unless_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    array(1).write_file(&a).unwrap();
    fs::hard_link(&a, &b).unwrap();
    let e = array(5).write_file(&a).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::HardLinked { path, links: 2 } if *path == a),
        "{e}"
    );
    let e = RecordOptions::new().create::<u32>(&a).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::HardLinked { .. }), "{e}");
    assert_eq!(read_u32s(&b), [1, 2]);

    // In place: both names see the new content, still one inode.
    let mut f =
        AtomicFile::create_with(&a, &AtomicOptions::new().hard_links_in_place(true)).unwrap();
    array(7).write_to(f.file()).unwrap();
    f.commit().unwrap();
    assert_eq!(read_u32s(&b), [7, 8]);
    assert_eq!(
        fs::metadata(&a).unwrap().ino(),
        fs::metadata(&b).unwrap().ino()
    );
    assert_eq!(fs::metadata(&a).unwrap().nlink(), 2);
}

#[test]
fn a_read_only_file_is_replaced_only_when_forced_and_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.ra");
    array(1).write_file(&path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    // As root too: no write bit for anyone is read-only.
    let e = array(5).write_file(&path).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Protected { path: p, why } if *p == path && why.starts_with("read-only")),
        "{e}"
    );
    let e = RecordOptions::new().create::<u32>(&path).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Protected { .. }), "{e}");
    assert_eq!(read_u32s(&path), [1, 2]);

    let mut f = AtomicFile::create_with(&path, &AtomicOptions::new().force(true)).unwrap();
    array(5).write_to(f.file()).unwrap();
    f.commit().unwrap();
    assert_eq!(read_u32s(&path), [5, 6]);
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o444);
}

/// Not root: a file of ours keeps its setuid bit when replaced (the owner is the same).
#[test]
fn a_files_own_setuid_bit_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suid.ra");
    array(1).write_file(&path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o4755)).unwrap();
    array(2).write_file(&path).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o4755);
    assert_eq!(read_u32s(&path), [2, 3]);
}

/// Another user's setuid file, replaced by root: still theirs, still setuid (not root's).
#[test]
#[cfg_attr(not_root, ignore = "making another user's file needs root (chown)")]
fn owners_are_kept_and_setuid_never_passes_to_another_owner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suid.ra");
    array(1).write_file(&path).unwrap();
    // Another user's setuid file, replaced by root: still theirs, still setuid (not root's).
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o4755)).unwrap();
    array(2).write_file(&path).unwrap();
    let m = fs::metadata(&path).unwrap();
    assert_eq!(
        (m.uid(), m.gid(), m.mode() & 0o7777),
        (65534, 65534, 0o4755)
    );
    assert_eq!(read_u32s(&path), [2, 3]);
}

#[test]
fn errors_name_the_destination_and_temporary_files_are_recognisable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-folder").join("x.ra");
    let e = array(1).write_file(&path).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with(&format!("{}: ", path.display())), "{text}");
    assert!(!text.contains("ra-tmp"), "{text}");

    // While it is written the temporary file has no name (Linux, O_TMPFILE) or one that says
    // what it is.
    let path = dir.path().join("x.ra");
    let f = AtomicFile::create(&path).unwrap();
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    match &names[..] {
        [] => {}
        [one] => assert!(one.starts_with(".x.ra.ra-tmp-"), "{names:?}"),
        _ => panic!("{names:?}"),
    }
    if cfg!(target_os = "linux") && !names.is_empty() {
        eprintln!("this file system has no O_TMPFILE: temporary files are named");
    }
    drop(f);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}
