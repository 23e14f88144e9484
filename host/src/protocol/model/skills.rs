//! The Skills extension's results (`skills/list`, `skills/get`) and the
//! children `resources/directory/read` lists. A skill's frontmatter is
//! what its plugin wrote, passed through as it was read.

use serde::Serialize;
use serde_json::{Map, Value};

/// One skill as `skills/list` and `skills/get` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillInfo<'a> {
    /// The URI of its `SKILL.md`.
    pub uri: &'a str,
    /// Its frontmatter, as its plugin wrote it.
    pub frontmatter: &'a Map<String, Value>,
    /// Every file of the skill.
    pub resources: Vec<SkillFileInfo<'a>>,
}

/// A file of a skill: where it is, its digest and its size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillFileInfo<'a> {
    /// Its URI.
    pub uri: &'a str,
    /// Its content's digest.
    pub digest: &'a str,
    /// Its size in bytes.
    pub size: usize,
}

/// `skills/list`'s result: a page of skills.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult<'a> {
    /// The skills on this page.
    pub skills: Vec<SkillInfo<'a>>,
    /// The cursor of the next page, if there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `skills/get`'s result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GetSkillResult<'a> {
    /// The skill.
    pub skill: SkillInfo<'a>,
}

/// A child of a skill's folder (or a plugin's skills) as a resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryChild<'a> {
    /// Its URI.
    pub uri: String,
    /// Its name: a file's or folder's, or the skill's for its `SKILL.md`.
    pub name: String,
    /// Its media type (a folder's is the directory type).
    pub mime_type: &'a str,
    /// A file's size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// The skill's description, on its `SKILL.md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
}

/// `resources/directory/read`'s result: a page of children.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult<'a> {
    /// The children on this page.
    pub resources: &'a [DirectoryChild<'a>],
    /// The cursor of the next page, if there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
