//! The folders this plugin may touch: the host's preopens (one per granted
//! root, at `/<root name>`), and paths checked against them.
//!
//! The sandbox is what keeps a path inside them: the host opens each root
//! once and resolves every path (`..`, symlinks) within it, so a symlink
//! out of a root or a sibling folder sharing a root's prefix is
//! unreachable whatever this code does. The checks here only give the
//! reference server's answers to paths outside every root, before the
//! sandbox would refuse them less clearly.

use wasi::filesystem::types::DescriptorFlags;

/// One granted folder.
pub struct Root {
    /// Where the plugin sees it, e.g. `/demo`.
    pub path: String,
    /// Whether the grant lets the plugin change it.
    pub writable: bool,
}

/// The granted folders, in the host's order.
pub fn granted() -> Vec<Root> {
    wasi::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(dir, path)| Root {
            writable: dir
                .get_flags()
                .is_ok_and(|f| f.contains(DescriptorFlags::MUTATE_DIRECTORY)),
            path: normalize("/", &path),
        })
        .collect()
}

/// `path` made absolute against `base` with `.` and `..` resolved by name,
/// as Node's `path.resolve` does (no trailing slash, `..` stops at `/`).
pub fn normalize(base: &str, path: &str) -> String {
    let start = if path.starts_with('/') { "" } else { base };
    let mut parts: Vec<&str> = Vec::new();
    for part in start.split('/').chain(path.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether `path` is `dir` or lies below it (`/data/root-evil` is not
/// below `/data/root`).
pub fn within(path: &str, dir: &str) -> bool {
    path == dir
        || dir == "/"
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The roots, with the checks the tools make.
pub struct Roots(pub Vec<Root>);

impl Roots {
    /// The list `list_allowed_directories` and errors show.
    pub fn listed(&self, separator: &str) -> String {
        self.0
            .iter()
            .map(|r| r.path.as_str())
            .collect::<Vec<_>>()
            .join(separator)
    }

    /// `requested` as an absolute path inside a root: a relative path is
    /// taken from the first root it stays inside (else the first root).
    pub fn resolve(&self, requested: &str) -> Result<String, String> {
        if requested.len() >= 2
            && requested.as_bytes()[0].is_ascii_alphabetic()
            && requested.as_bytes()[1] == b':'
            && matches!(requested.as_bytes().get(2), None | Some(b'/' | b'\\'))
        {
            return Err(format!(
                "Access denied - Windows-style path received on a POSIX host: {requested}"
            ));
        }
        let absolute = if requested.starts_with('/') {
            normalize("/", requested)
        } else {
            let first = self.0.first().map_or("/", |r| r.path.as_str());
            self.0
                .iter()
                .map(|r| normalize(&r.path, requested))
                .find(|candidate| self.0.iter().any(|r| within(candidate, &r.path)))
                .unwrap_or_else(|| normalize(first, requested))
        };
        if !self.0.iter().any(|r| within(&absolute, &r.path)) {
            return Err(format!(
                "Access denied - path outside allowed directories: {absolute} not in {}",
                self.listed(", ")
            ));
        }
        Ok(absolute)
    }

    /// `resolve`, for a change: the path's root must be granted read-write.
    pub fn resolve_for_change(&self, requested: &str) -> Result<String, String> {
        let path = self.resolve(requested)?;
        let root = self
            .0
            .iter()
            .filter(|r| within(&path, &r.path))
            .max_by_key(|r| r.path.len());
        match root {
            Some(root) if !root.writable => Err(format!(
                "Access denied - {} is granted read-only: {path} cannot be changed",
                root.path
            )),
            _ => Ok(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> Roots {
        Roots(vec![
            Root {
                path: "/docs".into(),
                writable: false,
            },
            Root {
                path: "/work".into(),
                writable: true,
            },
        ])
    }

    #[test]
    fn paths_resolve_inside_a_root_or_are_refused() {
        let r = roots();
        assert_eq!(r.resolve("/docs/a/../b.txt").unwrap(), "/docs/b.txt");
        assert_eq!(r.resolve("b.txt").unwrap(), "/docs/b.txt");
        assert!(r
            .resolve("/docs-evil/x")
            .unwrap_err()
            .contains("outside allowed"));
        assert!(r
            .resolve("/docs/../etc/passwd")
            .unwrap_err()
            .contains("/etc/passwd not in /docs, /work"));
        assert!(r
            .resolve("../../etc")
            .unwrap_err()
            .contains("outside allowed"));
        assert!(r.resolve("C:\\x").unwrap_err().contains("Windows-style"));
        assert!(r
            .resolve_for_change("/docs/x")
            .unwrap_err()
            .contains("read-only"));
        assert_eq!(r.resolve_for_change("/work/x").unwrap(), "/work/x");
    }
}
