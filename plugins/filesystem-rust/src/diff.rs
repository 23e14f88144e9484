//! A unified diff in the layout of jsdiff's `createTwoFilesPatch`, which the
//! reference server returns from `edit_file`: an `Index:` line, a rule, the
//! two file headers (tab, `original` / `modified`), hunks with four lines
//! of context, and `\ No newline at end of file` after a last line without
//! one.

use similar::{ChangeTag, TextDiff};

/// Lines of context around each change.
const CONTEXT: usize = 4;

/// The diff of `old` and `new` (both with `\n` line ends) of file `name`.
pub fn unified(name: &str, old: &str, new: &str) -> String {
    let mut out = format!(
        "Index: {name}\n===================================================================\n--- {name}\toriginal\n+++ {name}\tmodified\n"
    );
    let diff = TextDiff::from_lines(old, new);
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(old_range.start, old_range.len()),
            range(new_range.start, new_range.len())
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                let line = change.value();
                out.push(sign);
                match line.strip_suffix('\n') {
                    Some(line) => {
                        out.push_str(line);
                        out.push('\n');
                    }
                    None => {
                        out.push_str(line);
                        out.push_str("\n\\ No newline at end of file\n");
                    }
                }
            }
        }
    }
    out
}

/// `start,count` of a hunk, 1-based; an empty side names the line before it.
fn range(start: usize, count: usize) -> String {
    if count == 0 {
        format!("{start},0")
    } else {
        format!("{},{count}", start + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_carry_four_lines_of_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\n";
        let diff = unified("/x", old, new);
        assert_eq!(
            diff,
            "Index: /x\n===================================================================\n--- /x\toriginal\n+++ /x\tmodified\n@@ -1,9 +1,9 @@\n a\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n"
        );
        assert!(unified("/x", "a", "b")
            .ends_with("-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"));
        assert!(unified("/x", "", "a\n").contains("@@ -0,0 +1,1 @@"));
    }
}
