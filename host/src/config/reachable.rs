//! What `wasm-mcp config check` asks of a config beyond what loading it
//! does: that the files and folders it names are there to be read, now.
//! (A serving host reads secrets and keys when a plugin loads or a pull
//! starts, and reports them then; a check reports them all up front.)

use super::{Config, SecretSource};
use std::path::Path;

/// What a check found: problems (the config will not work as written) and
/// warnings (it may, somewhere else: a variable unset here).
#[derive(Debug, Default)]
pub struct Findings {
    /// Each names its key.
    pub problems: Vec<String>,
    /// Each names its key.
    pub warnings: Vec<String>,
}

impl Config {
    /// Checks that every file and folder the config names can be read
    /// (secret files, keys, certificates) or made (the audit log, the task
    /// store), and that secret variables are set. Blocking: reads files.
    pub fn reachable(&self) -> Findings {
        let mut found = Findings::default();
        if let Some(dir) = &self.server.plugins {
            folder(&mut found, "server.plugins", dir);
        }
        for (plugin, section) in &self.plugins {
            for (var, source) in &section.secrets {
                secret(
                    &mut found,
                    &format!("plugins.{plugin}.secrets.{var}"),
                    source,
                );
            }
            for var in &section.env {
                if std::env::var_os(var.get_ref()).is_none() {
                    found.warnings.push(format!(
                        "plugins.{plugin}.env: {} is not set here",
                        var.get_ref()
                    ));
                }
            }
        }
        for (registry, login) in &self.registries {
            let key = format!("registries.\"{registry}\".password");
            secret(&mut found, &key, &login.password);
        }
        if let Some(source) = &self.state.password {
            secret(&mut found, "state.password", source);
        }
        if let Some(lock) = &self.server.lock {
            // A lock holds every definition whole: bigger than a key.
            if let Err(e) = crate::files::open_regular(lock, 32 << 20) {
                found.problems.push(format!(
                    "server.lock: {} cannot be read: {e} (`wasm-mcp lock` writes it)",
                    lock.display()
                ));
            }
        }
        for (i, key) in self.signatures.keys.iter().enumerate() {
            file(&mut found, &format!("signatures.keys[{i}]"), key);
        }
        if let Some(root) = &self.signatures.trusted_root {
            file(&mut found, "signatures.trusted_root", root);
        }
        let http = &self.http;
        for (key, path) in [
            ("http.tls_cert_file", &http.tls_cert_file),
            ("http.tls_key_file", &http.tls_key_file),
            ("state.ca_file", &self.state.ca_file),
        ] {
            if let Some(path) = path {
                file(&mut found, key, path);
            }
        }
        let jwt = http.auth.as_ref().and_then(|a| a.jwt.as_ref());
        if let Some(path) = jwt.and_then(|j| j.public_key_file.as_ref()) {
            file(&mut found, "http.auth.jwt.public_key_file", path);
        }
        if let Some(var) = http.auth.as_ref().and_then(|a| a.tokens_env.as_ref()) {
            variable(&mut found, "http.auth.tokens_env", var);
        }
        if let Some(var) = jwt.and_then(|j| j.secret_env.as_ref()) {
            variable(&mut found, "http.auth.jwt.secret_env", var);
        }
        for (key, path) in [
            ("audit.file", self.audit.file.as_deref()),
            ("tasks.store", self.tasks.store.as_deref()),
        ] {
            let Some(path) = path.filter(|p| !p.as_os_str().is_empty() && *p != "-") else {
                continue;
            };
            match path.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) if !parent.is_dir() => found.problems.push(format!(
                    "{key}: the folder {} is not there to write {} in",
                    parent.display(),
                    path.display()
                )),
                _ => {}
            }
        }
        found
    }
}

fn folder(found: &mut Findings, key: &str, path: &Path) {
    if !path.is_dir() {
        found
            .problems
            .push(format!("{key}: {} is not a folder here", path.display()));
    }
}

fn file(found: &mut Findings, key: &str, path: &Path) {
    if let Err(e) = crate::files::read_regular(path, super::MAX_SECRET_BYTES.max(1 << 20)) {
        found
            .problems
            .push(format!("{key}: {} cannot be read: {e}", path.display()));
    }
}

fn variable(found: &mut Findings, key: &str, var: &str) {
    if std::env::var_os(var).is_none() {
        found.warnings.push(format!("{key}: {var} is not set here"));
    }
}

fn secret(found: &mut Findings, key: &str, source: &SecretSource) {
    match (&source.file, &source.env) {
        (Some(_), _) => {
            if let Err(e) = source.read() {
                found.problems.push(format!("{key}: {e}"));
            }
        }
        (None, Some(var)) => variable(found, key, var),
        (None, None) => {}
    }
}
