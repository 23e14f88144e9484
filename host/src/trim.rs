//! Gives back the memory only the host's start needed, once its first load
//! has ended.
//!
//! Two kinds:
//! - pages of read-only file mappings (the executable's code and constants,
//!   its libraries') that nothing ever wrote: start-up touched many of them
//!   (parsing the command line and the config, reading and linking the
//!   plugins). They leave this process's page tables (`MADV_DONTNEED`), not
//!   the page cache: a page needed again comes back with a minor fault, with
//!   the same bytes, since a page nothing wrote is the file's own page;
//! - the allocator's free memory (mimalloc's `mi_collect`), most of it left
//!   by the threads that loaded the plugins and exited.
//!
//! A mapping with even one written (copy-on-write) page, such as the
//! executable's relocated read-only data, is left whole: dropping it would
//! lose what was written.

// Only Linux has `/proc/self/smaps`; the parsing is tested everywhere.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

/// How long after the first load the pages go: the answers that waited for
/// it go out first (dropping the pages of the code that writes them while
/// it runs made the first `tools/list` ~1 ms later).
const SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Releases what start-up alone used, half a second from now, on a thread of
/// its own at a lower priority (it reads `/proc/self/smaps`, a blocking
/// read); nothing waits for it. Not with `WASM_MCP_NO_TRIM` set: valgrind,
/// for one, forgets the executable's symbols once its pages are released.
pub fn after_first_load() {
    if std::env::var_os("WASM_MCP_NO_TRIM").is_some() {
        return;
    }
    let _ = std::thread::Builder::new().name("trim".into()).spawn(|| {
        crate::runtime::lower_this_thread();
        std::thread::sleep(SETTLE);
        let released = release_clean_file_pages();
        collect_free_memory();
        tracing::debug!(
            released_kib = released / 1024,
            "released the pages only start-up used"
        );
    });
}

/// The most of `/proc/self/smaps` read: about 100 mappings here, each under
/// 1 KiB of text. A longer one is left unread (nothing is released).
const SMAPS_LIMIT: u64 = 8 << 20;

/// One mapping of `/proc/self/smaps`, as far as releasing it goes.
#[derive(Debug, PartialEq)]
struct Mapping {
    start: usize,
    end: usize,
    /// Readable, not writable, private and backed by a file.
    read_only_file: bool,
    /// Resident pages, in KiB.
    rss_kib: u64,
    /// Copy-on-write pages (written, so no longer the file's), in KiB;
    /// `None` until the record says.
    anonymous_kib: Option<u64>,
    /// Whether the record was read to its last line (`VmFlags`).
    whole: bool,
}

impl Mapping {
    /// Whether its resident pages are all the file's own, unwritten.
    fn releasable(&self) -> bool {
        self.whole && self.read_only_file && self.rss_kib > 0 && self.anonymous_kib == Some(0)
    }
}

/// Parses `/proc/PID/smaps` text into its mappings.
fn mappings(smaps: &str) -> Vec<Mapping> {
    let mut out: Vec<Mapping> = Vec::new();
    for line in smaps.lines() {
        if let Some(mapping) = header(line) {
            out.push(mapping);
            continue;
        }
        let Some(current) = out.last_mut() else {
            continue;
        };
        let mut fields = line.split_ascii_whitespace();
        let key = fields.next().unwrap_or_default();
        let kib = fields.next().and_then(|v| v.parse::<u64>().ok());
        match key {
            "Rss:" => current.rss_kib = kib.unwrap_or(0),
            "Anonymous:" => current.anonymous_kib = kib,
            "VmFlags:" => current.whole = true,
            _ => {}
        }
    }
    out
}

/// A mapping's first line: `start-end perms offset dev inode [path]`.
fn header(line: &str) -> Option<Mapping> {
    let mut fields = line.split_ascii_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?.as_bytes();
    let _offset = fields.next()?;
    let _device = fields.next()?;
    let inode: u64 = fields.next()?.parse().ok()?;
    if perms.len() != 4 || end <= start {
        return None;
    }
    Some(Mapping {
        start,
        end,
        read_only_file: perms[0] == b'r' && perms[1] == b'-' && perms[3] == b'p' && inode != 0,
        rss_kib: 0,
        anonymous_kib: None,
        whole: false,
    })
}

/// Drops this process's clean pages of read-only file mappings from its
/// page tables; returns how many bytes were resident in them.
#[cfg(target_os = "linux")]
fn release_clean_file_pages() -> u64 {
    use std::io::Read;
    let mut smaps = String::new();
    let read = std::fs::File::open("/proc/self/smaps")
        .and_then(|file| file.take(SMAPS_LIMIT + 1).read_to_string(&mut smaps));
    if read.is_err() || smaps.len() as u64 > SMAPS_LIMIT {
        return 0;
    }
    let mut released = 0;
    for mapping in mappings(&smaps).iter().filter(|m| m.releasable()) {
        // SAFETY: the range is a whole mapping of this process that is
        // neither writable nor written (no copy-on-write page): dropping its
        // pages changes no byte any thread reads from it, as each comes back
        // from the same file on its next touch.
        let done = unsafe {
            libc::madvise(
                mapping.start as *mut libc::c_void,
                mapping.end - mapping.start,
                libc::MADV_DONTNEED,
            )
        };
        if done == 0 {
            released += mapping.rss_kib * 1024;
        }
    }
    released
}

#[cfg(not(target_os = "linux"))]
fn release_clean_file_pages() -> u64 {
    0
}

/// Returns the allocator's free memory to the system, abandoned heaps
/// of exited threads included.
fn collect_free_memory() {
    // Links mimalloc (the binary's allocator) into whatever uses this, tests
    // included, where it is not the allocator and has nothing to return.
    use mimalloc as _;
    unsafe extern "C" {
        /// mimalloc's own.
        fn mi_collect(force: bool);
    }
    // SAFETY: mimalloc's documented entry, callable from any thread at any
    // time; it only frees memory no allocation holds.
    unsafe { mi_collect(true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
5581a0000000-5581a0200000 r--p 00000000 08:01 1234 /usr/bin/wasm-mcp
Size:               2048 kB
Rss:                 900 kB
Anonymous:             0 kB
VmFlags: rd mr mw me
5581a0200000-5581a2000000 r-xp 00200000 08:01 1234 /usr/bin/wasm-mcp
Size:              30720 kB
Rss:               18000 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
5581a2000000-5581a2100000 r--p 02000000 08:01 1234 /usr/bin/wasm-mcp
Rss:                1300 kB
Anonymous:          1300 kB
VmFlags: rd mr mw me ac
5581a2100000-5581a2200000 rw-p 02100000 08:01 1234 /usr/bin/wasm-mcp
Rss:                  40 kB
Anonymous:            40 kB
VmFlags: rd wr mr mw me ac
7f0000000000-7f0000100000 r--p 00000000 00:00 0
Rss:                  10 kB
Anonymous:            10 kB
VmFlags: rd mr mw me ac
7f0000100000-7f0000200000 r--s 00000000 08:01 99 /tmp/shared
Rss:                  10 kB
Anonymous:             0 kB
VmFlags: rd sh mr mw me
7f0000200000-7f0000300000 r-xp 00000000 08:01 77 /lib/libc.so.6
Rss:                 700 kB
Anonymous:             0 kB
";

    #[test]
    fn only_whole_unwritten_private_read_only_file_mappings_are_released() {
        let found = mappings(SMAPS);
        assert_eq!(found.len(), 7);
        let released: Vec<usize> = found
            .iter()
            .filter(|m| m.releasable())
            .map(|m| m.start)
            .collect();
        // The executable's read-only data and its code; not its relocated
        // data (written), its writable data, an anonymous mapping, a shared
        // one, nor a record cut off before its last line.
        assert_eq!(released, vec![0x5581a0000000, 0x5581a0200000]);
        assert_eq!(found[1].rss_kib, 18000);
        assert_eq!(found[2].anonymous_kib, Some(1300));
        assert!(!found[6].whole);
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let found = mappings("garbage\nRss: 5 kB\nzz-yy r--p 0 0 0 x\n1000-0 r--p 0 08:01 3 /x\n");
        assert!(found.is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn releasing_keeps_every_byte_of_the_executable() {
        static TABLE: [u64; 4096] = {
            let mut table = [0u64; 4096];
            let mut i = 0;
            while i < table.len() {
                table[i] = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                i += 1;
            }
            table
        };
        let sum = |t: &[u64]| t.iter().fold(0u64, |a, v| a.wrapping_add(*v));
        let before = sum(std::hint::black_box(&TABLE[..]));
        assert!(release_clean_file_pages() > 0);
        assert_eq!(sum(std::hint::black_box(&TABLE[..])), before);
        collect_free_memory();
    }
}
