//! Opaque cursors over the catalogue's lists.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

/// One page of `items` from `cursor`, and the cursor of the next page.
/// An unreadable cursor is an error (the caller answers -32602).
pub fn page<'a, T>(
    items: &'a [T],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(&'a [T], Option<String>), String> {
    let (range, next) = bounds(items.len(), cursor, page_size)?;
    Ok((&items[range], next))
}

/// Where the page from `cursor` lies in a list of `len` items, and the
/// cursor of the next page.
pub fn bounds(
    len: usize,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(std::ops::Range<usize>, Option<String>), String> {
    let start = match cursor {
        None => 0,
        Some(cursor) => decode(cursor).ok_or_else(|| format!("invalid cursor: {cursor:?}"))?,
    };
    if start > len {
        return Err("the cursor is past the end of the list".into());
    }
    let end = start.saturating_add(page_size.max(1)).min(len);
    let next = (end < len).then(|| encode(end));
    Ok((start..end, next))
}

fn encode(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("o:{offset}"))
}

fn decode(cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("o:")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn walks_every_item_once_and_rejects_garbage() {
        let items: Vec<u32> = (0..7).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (chunk, next) = page(&items, cursor.as_deref(), 3).unwrap();
            seen.extend_from_slice(chunk);
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, items);
        assert!(page(&items, Some("not-a-cursor"), 3).is_err());
        assert!(page(&items, Some(&super::encode(99)), 3).is_err());
    }
}
