//! The Skills extension (`io.modelcontextprotocol/skills`): `skills/list`,
//! `skills/get`, and `resources/directory/read` over the skills' folders.
//! The host serves what it read from each plugin's skills folder; no
//! plugin is called. A skill is seen by whoever may read its `SKILL.md`.

use super::{clip, invalid, Request};
use super::{Answer, Answered};
use crate::protocol::model::{
    to_json, DirectoryChild, GetSkillResult, ListSkillsResult, ReadDirectoryResult, SkillFileInfo,
    SkillInfo,
};
use crate::protocol::params::{self, Params};
use crate::registry::{pagination, Catalogue, SkillEntry};
use crate::server::access::Item;
use crate::skills::{Child, Skill, SkillFile, DIRECTORY_MIME};

/// The most skill entries on one page (an entry lists every file of its
/// skill, so a page of them is big).
const SKILLS_PER_PAGE: usize = 32;

/// `skills/list`: the skills the caller may read, a page at a time.
pub(super) fn list(request: &Request<'_>, catalogue: &Catalogue) -> Answered {
    let cursor = Params(request.params).optional_str("cursor")?;
    let visible: Vec<&SkillEntry> = catalogue
        .skills
        .iter()
        .filter(|s| sees(request, s))
        .collect();
    let page_size = request.conn.server.options.page_size.min(SKILLS_PER_PAGE);
    let (range, next) =
        pagination::bounds(visible.len(), cursor, page_size).map_err(params::invalid)?;
    let result = ListSkillsResult {
        skills: visible[range].iter().map(|s| entry(&s.skill)).collect(),
        next_cursor: next,
    };
    Ok(Answer::Result(to_json(&result)))
}

/// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
pub(super) fn get(request: &Request<'_>, catalogue: &Catalogue) -> Answered {
    let uri = Params(request.params).str("uri")?;
    let unknown = || invalid(format!("No skill is served at {}", clip(uri)));
    let found = catalogue.skill(uri).ok_or_else(unknown)?;
    request.may_see(
        &Item::skill(found.plugin.name(), &found.skill),
        &format!("skill {}", clip(uri)),
    )?;
    let result = GetSkillResult {
        skill: entry(&found.skill),
    };
    Ok(Answer::Result(to_json(&result)))
}

/// `resources/directory/read`: the direct children of a folder of a
/// skill (`skill://P/S[/path]`), or the skills of one plugin
/// (`skill://P`).
pub(super) fn read_directory(request: &Request<'_>, catalogue: &Catalogue) -> Answered {
    let uri = Params(request.params).str("uri")?;
    let cursor = Params(request.params).optional_str("cursor")?;
    let not_a_directory = || invalid(format!("{} is not a directory resource", clip(uri)));
    let mut children: Vec<DirectoryChild<'_>> = Vec::new();
    let plugin_level: Vec<&SkillEntry> = catalogue
        .skills
        .iter()
        .filter(|s| s.skill.root.rsplit_once('/').is_some_and(|(p, _)| p == uri))
        .filter(|s| sees(request, s))
        .collect();
    if !plugin_level.is_empty() {
        for s in plugin_level {
            children.push(folder(&s.skill.name, &s.skill.root));
        }
    } else {
        let (found, dir) = catalogue
            .skills
            .iter()
            .find_map(|s| {
                let rest = uri.strip_prefix(s.skill.root.as_str())?;
                let dir = if rest.is_empty() {
                    Some("")
                } else {
                    rest.strip_prefix('/')
                };
                dir.map(|dir| (s, dir))
            })
            .ok_or_else(not_a_directory)?;
        request.may_see(
            &Item::skill(found.plugin.name(), &found.skill),
            &format!("skill {}", clip(&found.skill.uri)),
        )?;
        let dir = decode(dir).ok_or_else(not_a_directory)?;
        let listed = found.skill.children(&dir).ok_or_else(not_a_directory)?;
        for child in listed {
            children.push(match child {
                Child::File(file) => file_resource(&found.skill, file),
                Child::Folder(name, uri) => folder(&name, &uri),
            });
        }
    }
    let page_size = request.conn.server.options.page_size;
    let (page, next) = pagination::page(&children, cursor, page_size).map_err(params::invalid)?;
    let result = ReadDirectoryResult {
        resources: page,
        next_cursor: next,
    };
    Ok(Answer::Result(to_json(&result)))
}

/// Whether the caller may read skill `s`.
fn sees(request: &Request<'_>, s: &SkillEntry) -> bool {
    let access = &request.conn.server.options.access;
    access
        .check(request.caller, &Item::skill(s.plugin.name(), &s.skill), "")
        .is_ok()
}

/// A skill's entry: its URI, its frontmatter verbatim, and every file
/// with its digest and size.
pub(in crate::server) fn entry(skill: &Skill) -> SkillInfo<'_> {
    SkillInfo {
        uri: &skill.uri,
        frontmatter: &skill.frontmatter,
        resources: skill
            .files
            .iter()
            .map(|f| SkillFileInfo {
                uri: &f.uri,
                digest: &f.digest,
                size: f.bytes.len(),
            })
            .collect(),
    }
}

/// A file of a skill as a directory child.
fn file_resource<'a>(skill: &'a Skill, file: &'a SkillFile) -> DirectoryChild<'a> {
    let own = file.uri == skill.uri;
    let name = file.path.rsplit('/').next().unwrap_or(&file.path);
    DirectoryChild {
        uri: file.uri.clone(),
        name: if own { &skill.name } else { name }.to_owned(),
        mime_type: file.mime,
        size: Some(file.bytes.len()),
        description: own.then(|| skill.description()),
    }
}

/// A folder as a directory child.
fn folder<'a>(name: &str, uri: &str) -> DirectoryChild<'a> {
    DirectoryChild {
        uri: uri.to_owned(),
        name: name.to_owned(),
        mime_type: DIRECTORY_MIME,
        size: None,
        description: None,
    }
}

/// A folder's path within its skill from the tail of its URI, percent-
/// decoded; `None` when it is not a path (an empty segment, not UTF-8).
fn decode(path: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    let empty_segment = !decoded.is_empty() && decoded.split('/').any(str::is_empty);
    (!empty_segment).then(|| decoded.into_owned())
}
