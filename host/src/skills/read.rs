//! Reading a skills folder from disk, bounded and without following
//! anything out of it: every entry is opened relative to its open parent
//! with `O_NOFOLLOW` and checked with `fstat` on the open descriptor, so a
//! symlink, a FIFO or a device is refused whatever is swapped in meanwhile.
//! Blocking: run it on a blocking thread.

use super::frontmatter::{self, FrontmatterError};
use super::{
    encode, encode_path, is_valid_name, mime_of, Limits, Skill, SkillFile, Skills, MAX_DEPTH,
    MAX_ENTRIES, MAX_FILES, MAX_FOLDERS, MAX_SKILL_BYTES,
};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use sha2::{Digest as _, Sha256};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

/// Why a skill (or a skills folder) is refused: the end of "skill NAME
/// refused: ...". Paths are within the skill.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A folder cannot be listed.
    #[error("folder not readable: {0}")]
    Unlisted(rustix::io::Errno),
    /// A folder holds more than [`MAX_ENTRIES`] entries.
    #[error("a folder holds more than {MAX_ENTRIES} entries")]
    LongFolder,
    /// A name that is not UTF-8 (written lossily).
    #[error("the name {0:?} is not UTF-8")]
    NameNotUtf8(String),
    /// An entry cannot be looked at or opened.
    #[error("{path}: {errno}")]
    Os {
        /// The entry.
        path: String,
        /// Why.
        errno: rustix::io::Errno,
    },
    /// A file cannot be read.
    #[error("{path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// An entry that is neither a regular file nor a folder.
    #[error("{path} is {what}")]
    Kind {
        /// The entry.
        path: String,
        /// What it is ("a symlink (not followed)", "a FIFO", ...).
        what: &'static str,
    },
    /// A folder name outside the Agent Skills naming rules.
    #[error(
        "a skill's folder name must be 1 to 64 lowercase letters, digits and single \
         hyphens inside (the Agent Skills naming rules)"
    )]
    BadName,
    /// More than [`MAX_ENTRIES`] entries in one skill.
    #[error("it holds more than {MAX_ENTRIES} entries")]
    TooManyEntries,
    /// Folders nested more than [`MAX_DEPTH`] deep (the deepest).
    #[error("{0}: folders nest more than {MAX_DEPTH} deep")]
    TooDeep(String),
    /// More than [`MAX_FOLDERS`] folders.
    #[error("it holds more than {MAX_FOLDERS} folders")]
    TooManyFolders,
    /// More than [`MAX_FILES`] files.
    #[error("it holds more than {MAX_FILES} files")]
    TooManyFiles,
    /// A file over the per-file limit.
    #[error(
        "{path} has {size} bytes, over the limit of {limit} per file ([server] skill_file_kb)"
    )]
    FileTooBig {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A file that would take the skill or the plugin over its bytes.
    #[error(
        "{0} would take its skills over their limit (at most {MAX_SKILL_BYTES} bytes per \
         skill, and [server] skills_mb per plugin)"
    )]
    OverBudget(String),
    /// No `SKILL.md`.
    #[error("it has no SKILL.md")]
    NoManifest,
    /// A `SKILL.md` that is not UTF-8.
    #[error("its SKILL.md is not UTF-8")]
    ManifestNotUtf8,
    /// A `SKILL.md` whose frontmatter is refused.
    #[error("SKILL.md: {0}")]
    Frontmatter(#[from] FrontmatterError),
    /// A `SKILL.md` naming another skill than its folder.
    #[error("its SKILL.md names it {named}, not {folder} as its folder does")]
    NameMismatch {
        /// The name it gives, as JSON.
        named: serde_json::Value,
        /// The folder's name.
        folder: String,
    },
}

/// The skills of plugin `plugin` in `folder` (its `NAME.skills`), within
/// `limits`: none when there is no such folder. Refused skills are in
/// `problems`.
pub fn read_folder(folder: &Path, plugin: &str, limits: &Limits) -> Skills {
    let mut skills = Skills::default();
    let root = match rustix::fs::open(
        folder,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => {
            skills.digest = digest_of(&skills.skills);
            return skills;
        }
        Err(e) => {
            skills.problems.push(format!(
                "{} is not readable as a folder: {e}",
                folder.display()
            ));
            skills.digest = digest_of(&skills.skills);
            return skills;
        }
    };
    match entries(&root) {
        Err(e) => skills.problems.push(e.to_string()),
        Ok(names) => {
            let mut total = 0u64;
            for name in names {
                if skills.skills.len() == limits.skills {
                    skills.problems.push(format!(
                        "skill {name} refused: a plugin may ship at most {} skills \
                         ([server] skills_per_plugin)",
                        limits.skills
                    ));
                    continue;
                }
                let room = limits.plugin_bytes - total;
                match read_skill(&root, &name, plugin, room, limits.file_bytes) {
                    Ok(Some(skill)) => {
                        total += skill
                            .files
                            .iter()
                            .map(|f| f.bytes.len() as u64)
                            .sum::<u64>();
                        skills.skills.push(Arc::new(skill));
                    }
                    Ok(None) => {}
                    Err(e) => skills.problems.push(format!("skill {name} refused: {e}")),
                }
            }
        }
    }
    skills.digest = digest_of(&skills.skills);
    skills
}

/// The names in an open folder, hidden ones (`.name`) left out, sorted;
/// refused beyond [`MAX_ENTRIES`] or when a name is not UTF-8.
fn entries(dir: &OwnedFd) -> Result<Vec<String>, Refusal> {
    let listing = Dir::read_from(dir).map_err(Refusal::Unlisted)?;
    let mut names = Vec::new();
    for (seen, entry) in listing.enumerate() {
        if seen >= MAX_ENTRIES + 2 {
            return Err(Refusal::LongFolder);
        }
        let entry = entry.map_err(Refusal::Unlisted)?;
        let bytes = entry.file_name().to_bytes();
        let name = std::str::from_utf8(bytes)
            .map_err(|_| Refusal::NameNotUtf8(String::from_utf8_lossy(bytes).into_owned()))?;
        if !name.starts_with('.') {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// What kind of entry `name` in `dir` is, without following a symlink.
fn kind_at(dir: &OwnedFd, name: &str) -> Result<FileType, Refusal> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .map(|stat| FileType::from_raw_mode(stat.st_mode))
        .map_err(|errno| os(name, errno))
}

/// `errno` for the entry at `path`.
fn os(path: &str, errno: rustix::io::Errno) -> Refusal {
    Refusal::Os {
        path: path.to_owned(),
        errno,
    }
}

/// A refusal for an entry of kind `kind` at `path`, if it is not a regular
/// file or a folder.
fn refused_kind(kind: FileType, path: &str) -> Option<Refusal> {
    let what = match kind {
        FileType::RegularFile | FileType::Directory => return None,
        FileType::Symlink => "a symlink (not followed)",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Unknown => "not a regular file",
    };
    Some(Refusal::Kind {
        path: path.to_owned(),
        what,
    })
}

/// Opens folder `name` in `dir`, not through a symlink.
fn open_folder(dir: &OwnedFd, name: &str) -> Result<OwnedFd, Refusal> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| os(name, errno))
}

/// Skill `name` in the skills folder `parent`: `None` when `name` is not a
/// folder (a stray file beside the skills is ignored). `budget` is how
/// many bytes the plugin's skills may still hold; `file_bytes` the largest
/// file.
fn read_skill(
    parent: &OwnedFd,
    name: &str,
    plugin: &str,
    budget: u64,
    file_bytes: u64,
) -> Result<Option<Skill>, Refusal> {
    let kind = kind_at(parent, name)?;
    if kind == FileType::RegularFile {
        return Ok(None);
    }
    if let Some(refusal) = refused_kind(kind, name) {
        return Err(refusal);
    }
    if !is_valid_name(name) {
        return Err(Refusal::BadName);
    }
    let root = format!("skill://{}/{name}", encode(plugin));
    let limit = budget.min(MAX_SKILL_BYTES);
    let mut files: Vec<Arc<SkillFile>> = Vec::new();
    let (mut bytes_held, mut seen) = (0u64, 0usize);
    // Folders to read: open descriptor, path within the skill, depth.
    let mut pending = vec![(open_folder(parent, name)?, String::new(), 0usize)];
    let mut opened = 1;
    while let Some((dir, rel, depth)) = pending.pop() {
        for entry in entries(&dir)? {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(Refusal::TooManyEntries);
            }
            let path = if rel.is_empty() {
                entry.clone()
            } else {
                format!("{rel}/{entry}")
            };
            let kind = kind_at(&dir, &entry)?;
            if let Some(refusal) = refused_kind(kind, &path) {
                return Err(refusal);
            }
            if kind == FileType::Directory {
                if depth + 1 > MAX_DEPTH {
                    return Err(Refusal::TooDeep(path));
                }
                opened += 1;
                if opened > MAX_FOLDERS {
                    return Err(Refusal::TooManyFolders);
                }
                pending.push((open_folder(&dir, &entry)?, path, depth + 1));
                continue;
            }
            if files.len() == MAX_FILES {
                return Err(Refusal::TooManyFiles);
            }
            let content = read_file(&dir, &entry, &path, limit - bytes_held, file_bytes)?;
            bytes_held += content.len() as u64;
            files.push(Arc::new(SkillFile {
                uri: format!("{root}/{}", encode_path(&path)),
                mime: mime_of(&entry, &content),
                digest: format!("sha256:{:x}", Sha256::digest(&content)),
                bytes: content.into(),
                path,
            }));
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let manifest = files
        .iter()
        .find(|f| f.path == "SKILL.md")
        .ok_or(Refusal::NoManifest)?;
    let text = std::str::from_utf8(&manifest.bytes).map_err(|_| Refusal::ManifestNotUtf8)?;
    let frontmatter = frontmatter::parse(text)?;
    if frontmatter["name"] != name {
        return Err(Refusal::NameMismatch {
            named: frontmatter["name"].clone(),
            folder: name.to_owned(),
        });
    }
    Ok(Some(Skill {
        name: name.to_owned(),
        uri: manifest.uri.clone(),
        root,
        frontmatter,
        files,
    }))
}

/// Reads regular file `name` in `dir` (`path` within the skill), at most
/// `file_bytes` and `room` bytes.
fn read_file(
    dir: &OwnedFd,
    name: &str,
    path: &str,
    room: u64,
    file_bytes: u64,
) -> Result<Vec<u8>, Refusal> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| os(path, errno))?;
    let stat = rustix::fs::fstat(fd.as_fd()).map_err(|errno| os(path, errno))?;
    if let Some(refusal) = refused_kind(FileType::from_raw_mode(stat.st_mode), path) {
        return Err(refusal);
    }
    let size = stat.st_size as u64;
    if size > file_bytes {
        return Err(Refusal::FileTooBig {
            path: path.to_owned(),
            size,
            limit: file_bytes,
        });
    }
    if size > room {
        return Err(Refusal::OverBudget(path.to_owned()));
    }
    crate::files::read_capped(std::fs::File::from(fd), size, file_bytes.min(room)).map_err(
        |error| Refusal::Read {
            path: path.to_owned(),
            error,
        },
    )
}

/// The folders of a skills folder that a watcher should watch: itself and
/// the folders within, as [`read_folder`] reads them (hidden ones and
/// symlinks left out), at most one skills' worth of folders per skill
/// (`max_skills` + 1 skills, [`MAX_FOLDERS`] each, [`MAX_DEPTH`] deep):
/// an empty list when there is no such folder.
pub fn folders(folder: &Path, max_skills: usize) -> Vec<std::path::PathBuf> {
    let Ok(root) = rustix::fs::open(
        folder,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    ) else {
        return Vec::new();
    };
    let limit = (max_skills + 1) * MAX_FOLDERS;
    let mut found = vec![folder.to_owned()];
    let mut pending = vec![(root, folder.to_owned(), 0usize)];
    while let Some((dir, path, depth)) = pending.pop() {
        let Ok(names) = entries(&dir) else { continue };
        for name in names {
            if found.len() >= limit {
                return found;
            }
            // A skill's own folder is one deeper than the skills folder.
            if depth > MAX_DEPTH || !matches!(kind_at(&dir, &name), Ok(FileType::Directory)) {
                continue;
            }
            if let Ok(child) = open_folder(&dir, &name) {
                found.push(path.join(&name));
                pending.push((child, path.join(&name), depth + 1));
            }
        }
    }
    found
}

/// One digest over `skills`: each URI and its files' URIs and digests.
fn digest_of(skills: &[Arc<Skill>]) -> String {
    let mut digest = Sha256::new();
    for skill in skills {
        digest.update(format!("{}\n", skill.uri));
        for file in &skill.files {
            digest.update(format!("{} {}\n", file.uri, file.digest));
        }
    }
    format!("sha256:{:x}", digest.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn skill(dir: &Path, name: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        fs::create_dir_all(path.join("refs/deep")).unwrap();
        fs::write(
            path.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Does {name}\n---\nRead refs/a b.md\n"),
        )
        .unwrap();
        fs::write(path.join("refs/a b.md"), "A").unwrap();
        fs::write(path.join("refs/deep/c.bin"), [0xff, 0]).unwrap();
        fs::write(path.join(".hidden"), "x").unwrap();
        path
    }

    #[test]
    fn reads_skills_with_digests_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        skill(dir.path(), "alpha");
        fs::write(dir.path().join("README"), "not a skill").unwrap();
        let read = read_folder(dir.path(), "my_plugin", &Limits::default());
        assert!(read.problems.is_empty(), "{:?}", read.problems);
        let [alpha] = &read.skills[..] else { panic!() };
        assert_eq!(alpha.uri, "skill://my_plugin/alpha/SKILL.md");
        assert_eq!(alpha.root, "skill://my_plugin/alpha");
        let uris: Vec<_> = alpha.files.iter().map(|f| f.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://my_plugin/alpha/SKILL.md",
                "skill://my_plugin/alpha/refs/a%20b.md",
                "skill://my_plugin/alpha/refs/deep/c.bin"
            ]
        );
        assert_eq!(
            alpha.files[1].digest,
            "sha256:559aead08264d5795d3909718cdd05abd49572e84fe55590eef31a88a08fdffd"
        );
        assert_eq!(alpha.files[2].mime, "application/octet-stream");
        assert_eq!(folders(dir.path(), 64).len(), 4);
        let root: Vec<_> = alpha
            .children("")
            .unwrap()
            .into_iter()
            .map(|c| match c {
                crate::skills::Child::File(f) => f.path.clone(),
                crate::skills::Child::Folder(name, uri) => format!("{name} {uri}"),
            })
            .collect();
        assert_eq!(root, ["SKILL.md", "refs skill://my_plugin/alpha/refs"]);
        assert_eq!(alpha.children("refs").unwrap().len(), 2);
        assert!(alpha.children("nope").is_none());
        assert!(alpha.children("SKILL.md").is_none());
        let again = read_folder(dir.path(), "my_plugin", &Limits::default());
        assert_eq!(again.digest, read.digest);
        fs::write(dir.path().join("alpha/refs/a b.md"), "B").unwrap();
        assert_ne!(
            read_folder(dir.path(), "my_plugin", &Limits::default()).digest,
            read.digest
        );
        assert!(
            read_folder(&dir.path().join("absent"), "p", &Limits::default())
                .skills
                .is_empty()
        );
    }

    #[test]
    fn hostile_skills_are_refused_and_the_others_served() {
        let dir = tempfile::tempdir().unwrap();
        skill(dir.path(), "good");
        let out = skill(dir.path(), "link-out");
        std::os::unix::fs::symlink("/etc", out.join("refs/etc")).unwrap();
        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(dir.path().join("good"), &linked).unwrap();
        let fifo = skill(dir.path(), "fifo").join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let big = skill(dir.path(), "big").join("huge.txt");
        fs::File::create(&big).unwrap().set_len(1 << 30).unwrap();
        let many = skill(dir.path(), "many");
        for i in 0..MAX_FILES {
            fs::write(many.join(format!("f{i}")), "").unwrap();
        }
        let wrong = skill(dir.path(), "wrong-name");
        fs::write(
            wrong.join("SKILL.md"),
            "---\nname: other\ndescription: x\n---\n",
        )
        .unwrap();
        fs::create_dir(dir.path().join("Bad_Name")).unwrap();
        let mut deep = skill(dir.path(), "deep");
        for _ in 0..=MAX_DEPTH {
            deep = deep.join("d");
        }
        fs::create_dir_all(&deep).unwrap();
        let read = read_folder(dir.path(), "p", &Limits::default());
        let names: Vec<_> = read.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good"]);
        let problems = read.problems.join("\n");
        for says in [
            "skill link-out refused: refs/etc is a symlink",
            "skill linked refused: linked is a symlink",
            "skill fifo refused: pipe is a FIFO",
            "skill big refused: huge.txt has 1073741824 bytes",
            "skill many refused: it holds more than 512 files",
            "names it \"other\"",
            "skill Bad_Name refused: a skill's folder name",
            "nest more than 8 deep",
        ] {
            assert!(problems.contains(says), "{says}: {problems}");
        }
    }
}
