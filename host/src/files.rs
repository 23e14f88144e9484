//! Reading files the host does not control (plugin components, manifests,
//! the config, cached artifacts): regular files only, up to a size cap.
//!
//! A path may name a FIFO, a device, a folder or a huge sparse file. The
//! file is opened without blocking (`O_NONBLOCK`: opening a FIFO with no
//! writer would otherwise wait forever), checked with `fstat` on the open
//! descriptor (so a swap after the check changes nothing), and read with a
//! cap. These calls block: run them on a blocking thread when on a runtime.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The largest manifest (`<plugin>.toml`) read.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 10;

/// The largest config file read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A new folder under the system's temporary folder, named `prefix` and
/// random characters, created atomically (it did not exist before), that
/// only this user may enter (0700): another local user can neither
/// predict it nor plant files or symlinks in it. Removed when dropped.
/// Blocks briefly (one `mkdir`).
pub fn private_temp_dir(prefix: &str) -> io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    // Made with that mode (a umask only takes bits away); checked all the same.
    let mode = std::fs::symlink_metadata(dir.path())?.mode() & 0o777;
    if mode != 0o700 {
        return Err(io::Error::other(format!(
            "the temporary folder {} has mode {mode:o}, not 700",
            dir.path().display()
        )));
    }
    Ok(dir)
}

/// Opens `path` (following symlinks) for reading if it is a regular file of
/// at most `limit` bytes.
pub fn open_regular(path: &Path, limit: u64) -> io::Result<(File, std::fs::Metadata)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", kind_of(&meta)),
        ));
    }
    if meta.len() > limit {
        return Err(too_big(meta.len(), limit));
    }
    Ok((file, meta))
}

/// Reads `path` whole if it is a regular file of at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (file, meta) = open_regular(path, limit)?;
    read_capped(file, meta.len(), limit)
}

/// Like [`read_regular`], as text.
pub fn read_regular_text(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Reads an open file to its end, refusing more than `limit` bytes (the
/// file may grow after it was checked).
pub fn read_capped(file: File, expected: u64, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(expected.min(limit) as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

fn too_big(size: u64, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{size} bytes, over the limit of {limit} bytes"),
    )
}

/// What kind of file `meta` describes, in words.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The effective user id of this process.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether `meta` belongs to this process's user and nobody else may write it.
pub fn owned_and_private(meta: &std::fs::Metadata) -> bool {
    meta.uid() == effective_uid() && meta.mode() & 0o022 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_fifos_folders_and_big_files_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.wasm");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_regular(&fifo, 10).unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        let e = read_regular(dir.path(), 10).unwrap_err().to_string();
        assert!(e.contains("folder"), "{e}");
        let big = dir.path().join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let e = read_regular(&big, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("over the limit"), "{e}");
        let ok = dir.path().join("ok");
        std::fs::write(&ok, b"hello").unwrap();
        assert_eq!(read_regular(&ok, 5).unwrap(), b"hello");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let e = read_regular(&link, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("device"), "{e}");
    }
}
