//! Roots per tenant (`path = "/srv/files/{tenant}"`): each tenant's own
//! folder inside the root's parent, made on its first use (mode 0700) and
//! named by the tenant's key ([`crate::tenant`]: never `..`, never a `/`).
//! A call sees only its tenant's folder, at the root's guest path.

use super::grants::DirHandle;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::Arc;

/// The most tenant folders kept open per root; past it the cache starts
/// afresh (a folder is opened again on its tenant's next call).
const MAX_OPEN: usize = 1024;

/// The folders of one root's tenants.
#[derive(Debug)]
pub struct TenantDirs {
    parent: Arc<DirHandle>,
    open: Mutex<HashMap<Arc<str>, Arc<DirHandle>>>,
}

impl TenantDirs {
    /// The tenants' folders inside `parent`.
    pub fn new(parent: Arc<DirHandle>) -> Self {
        TenantDirs {
            parent,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The folder of the tenant whose key is `key`, made if it is not
    /// there yet. A folder entry that is not a folder (a file, a symlink)
    /// is an error, never followed.
    pub fn folder(&self, key: &Arc<str>) -> std::io::Result<Arc<DirHandle>> {
        if let Some(dir) = self.open.lock().get(key) {
            return Ok(dir.clone());
        }
        let dir = Arc::new(self.open_or_make(key)?);
        let mut open = self.open.lock();
        if open.len() >= MAX_OPEN {
            open.clear();
        }
        open.insert(key.clone(), dir.clone());
        Ok(dir)
    }

    fn open_or_make(&self, key: &str) -> std::io::Result<DirHandle> {
        use rustix::fs::{mkdirat, Mode};
        debug_assert!(!key.is_empty() && !key.contains('/') && key != "..");
        let parent = self.parent.file();
        match DirHandle::open_child(&self.parent, key) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match mkdirat(parent.as_fd(), key, Mode::RWXU) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                DirHandle::open_child(&self.parent, key)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn each_tenant_gets_a_private_folder_inside_the_parent() {
        let root = tempfile::tempdir().unwrap();
        let dirs = TenantDirs::new(Arc::new(DirHandle::open(root.path()).unwrap()));
        let key: Arc<str> = Arc::from(crate::tenant::encode("../../x"));
        let dir = dirs.folder(&key).unwrap();
        let made = root.path().join(&*key);
        assert!(made.is_dir());
        assert_eq!(made.metadata().unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(
            dir.open_path().unwrap().canonicalize().unwrap(),
            made.canonicalize().unwrap()
        );
        // Opened again from the cache, and again after it is forgotten.
        assert!(Arc::ptr_eq(&dir, &dirs.folder(&key).unwrap()));
        dirs.open.lock().clear();
        dirs.folder(&key).unwrap();
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_or_file_in_a_tenants_place_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("mallory")).unwrap();
        std::fs::write(root.path().join("eve"), "x").unwrap();
        let dirs = TenantDirs::new(Arc::new(DirHandle::open(root.path()).unwrap()));
        assert!(dirs.folder(&Arc::from("mallory")).is_err());
        assert!(dirs.folder(&Arc::from("eve")).is_err());
    }
}
