//! Text the reference server's answers are made of: sizes, dates, error
//! messages in Node's words, name order and padding.

use std::cmp::Ordering;
use std::io::ErrorKind;
use std::time::{SystemTime, UNIX_EPOCH};

/// `1.50 KB`, as the reference's `formatSize` (two decimals rounded half
/// up, as JavaScript's `toFixed`; bytes alone below 1 KiB).
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    if bytes == 0 {
        return "0 B".to_owned();
    }
    let i = ((bytes as f64).ln() / 1024f64.ln()).floor() as usize;
    if i == 0 {
        return format!("{bytes} B");
    }
    let unit = i.min(UNITS.len() - 1);
    // bytes / 1024^unit is exact in binary, so its rounding is exact too.
    let divisor = 1u128 << (10 * unit);
    let hundredths = (u128::from(bytes) * 100 + divisor / 2) / divisor;
    format!(
        "{}.{:02} {}",
        hundredths / 100,
        hundredths % 100,
        UNITS[unit]
    )
}

/// A time as JavaScript's `Date.prototype.toString` writes it in UTC:
/// `Tue Nov 24 2026 21:04:22 GMT+0000 (Coordinated Universal Time)`.
pub fn date(at: SystemTime) -> String {
    let secs = match at.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64) - 1,
    };
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil(days);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {day:02} {year:04} {:02}:{:02}:{:02} GMT+0000 (Coordinated Universal Time)",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[month as usize - 1],
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// The calendar date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// An I/O error in Node's words: `ENOENT: no such file or directory, open '/x'`.
pub fn io_error(e: &std::io::Error, syscall: &str, path: &str) -> String {
    let what = match e.kind() {
        ErrorKind::NotFound => "ENOENT: no such file or directory",
        ErrorKind::PermissionDenied => "EACCES: permission denied",
        ErrorKind::AlreadyExists => "EEXIST: file already exists",
        ErrorKind::NotADirectory => "ENOTDIR: not a directory",
        ErrorKind::IsADirectory => "EISDIR: illegal operation on a directory",
        ErrorKind::DirectoryNotEmpty => "ENOTEMPTY: directory not empty",
        ErrorKind::ReadOnlyFilesystem => "EROFS: read-only file system",
        _ => return format!("{e}, {syscall} '{path}'"),
    };
    format!("{what}, {syscall} '{path}'")
}

/// ASCII punctuation and symbols in the order of CLDR's root collation.
const PUNCTUATION: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

/// Names in about the order of JavaScript's `localeCompare` (ICU's root
/// collation): punctuation and symbols (in CLDR's order) before digits
/// before letters, letters compared without case first, then lower case
/// before upper case.
pub fn locale_order(a: &str, b: &str) -> Ordering {
    fn primary(c: char) -> (u8, u32) {
        if c.is_alphabetic() {
            (2, u32::from(c.to_lowercase().next().unwrap_or(c)))
        } else if c.is_numeric() {
            (1, u32::from(c))
        } else {
            let rank = PUNCTUATION.find(c).map_or(u32::from(c) + 128, |i| i as u32);
            (0, rank)
        }
    }
    let by_primary = a.chars().map(primary).cmp(b.chars().map(primary));
    by_primary.then_with(|| {
        let tertiary = |s: &str| s.chars().map(|c| c.is_uppercase()).collect::<Vec<_>>();
        tertiary(a).cmp(&tertiary(b))
    })
}

/// `text` padded with spaces to `width` UTF-16 units (JavaScript's `padEnd`).
pub fn pad_end(text: &str, width: usize) -> String {
    let units = text.encode_utf16().count();
    format!("{text}{}", " ".repeat(width.saturating_sub(units)))
}

/// `text` padded on the left (JavaScript's `padStart`).
pub fn pad_start(text: &str, width: usize) -> String {
    let units = text.encode_utf16().count();
    format!("{}{text}", " ".repeat(width.saturating_sub(units)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sizes_round_as_to_fixed_does() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1024), "1.00 KB");
        assert_eq!(size(1152), "1.13 KB"); // 1.125: half up
        assert_eq!(size(1536), "1.50 KB");
        assert_eq!(size(5 << 20), "5.00 MB");
        assert_eq!(size(3 << 50), "3072.00 TB");
    }

    #[test]
    fn dates_read_as_javascript_writes_them() {
        let at = UNIX_EPOCH + Duration::from_secs(1_795_554_262);
        assert_eq!(
            date(at),
            "Tue Nov 24 2026 21:04:22 GMT+0000 (Coordinated Universal Time)"
        );
        assert_eq!(
            date(UNIX_EPOCH),
            "Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)"
        );
    }

    #[test]
    fn names_sort_without_case_first() {
        let mut names = vec!["b", "B", ".x", "a", "_x", "10", "A"];
        names.sort_by(|a, b| locale_order(a, b));
        assert_eq!(names, ["_x", ".x", "10", "a", "A", "b", "B"]);
    }
}
