//! Resources with fixed URIs, and resource templates (RFC 6570 level 1 and 2).

use crate::bindings::exports::wasm_mcp::plugin::resources as wit;
use crate::bindings::wasm_mcp::plugin::types::Error;
use crate::content::ResourceContents;
use wasm_mcp_common::UriTemplate;

/// What a resource reader may return: text, contents, or a list of contents.
pub trait IntoContents {
    /// Converts the value into the contents of the resource at `uri`.
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents>;
}

impl IntoContents for String {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::text(uri, mime_type, self)]
    }
}

impl IntoContents for &str {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::text(uri, mime_type, self)]
    }
}

impl IntoContents for Vec<u8> {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::blob(uri, mime_type, self)]
    }
}

impl IntoContents for ResourceContents {
    fn into_contents(self, _: &str, _: Option<&str>) -> Vec<ResourceContents> {
        vec![self]
    }
}

impl IntoContents for Vec<ResourceContents> {
    fn into_contents(self, _: &str, _: Option<&str>) -> Vec<ResourceContents> {
        self
    }
}

pub(crate) type Reader = Box<dyn Fn(&str, &UriVars) -> Result<Vec<ResourceContents>, Error>>;

fn reader<R, E, F>(f: F) -> Reader
where
    R: IntoContents + 'static,
    E: std::fmt::Display + 'static,
    F: Fn(&str, &UriVars) -> Result<R, E> + 'static,
{
    Box::new(move |uri, vars| match f(uri, vars) {
        Ok(r) => Ok(r.into_contents(uri, None)),
        Err(e) => Err(Error::Internal(e.to_string())),
    })
}

/// A resource with a fixed URI.
pub struct Resource {
    pub(crate) meta: wit::Resource,
    pub(crate) read: Reader,
}

impl Resource {
    /// A resource at `uri` named `name`, read by `f`.
    pub fn new<R, E, F>(uri: impl Into<String>, name: impl Into<String>, f: F) -> Self
    where
        R: IntoContents + 'static,
        E: std::fmt::Display + 'static,
        F: Fn(&str) -> Result<R, E> + 'static,
    {
        let read = reader(move |uri: &str, _: &UriVars| f(uri));
        Resource {
            meta: wit::Resource {
                uri: uri.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
                annotations: None,
                icons: Vec::new(),
                meta: None,
            },
            read,
        }
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        let mime: String = mime_type.into();
        self.meta.mime_type = Some(mime.clone());
        let read = std::mem::replace(&mut self.read, Box::new(|_, _| Ok(Vec::new())));
        self.read = Box::new(move |uri, vars| {
            let mut contents = read(uri, vars)?;
            for c in &mut contents {
                c.mime_type.get_or_insert_with(|| mime.clone());
            }
            Ok(contents)
        });
        self
    }

    /// Sets what the resource is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.meta.description = Some(description.into());
        self
    }

    /// Sets a human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.meta.title = Some(title.into());
        self
    }

    /// An interactive view (MCP Apps) at `uri`, a `ui://` URI, named
    /// `name`: the HTML page `html`, of type [`VIEW_MIME_TYPE`]. A tool
    /// names it with [`Tool::view`](crate::Tool::view); a client that
    /// renders views shows it in a sandboxed frame.
    pub fn view(uri: impl Into<String>, name: impl Into<String>, html: impl Into<String>) -> Self {
        let html: String = html.into();
        Resource::new(uri, name, move |_| Ok::<_, String>(html.clone())).mime_type(VIEW_MIME_TYPE)
    }

    /// Sets the view's `_meta.ui`, on the listed resource and on what a
    /// read returns: its content security policy (`csp`:
    /// `connectDomains`, `resourceDomains`, `frameDomains`,
    /// `baseUriDomains`, lists of origins), the `permissions` it asks for
    /// (`camera`, `microphone`, `geolocation`, `clipboardWrite`, each
    /// `{}`), `prefersBorder`. The host refuses a malformed one.
    pub fn ui(mut self, ui: serde_json::Value) -> Self {
        let meta = serde_json::json!({ "ui": ui }).to_string();
        self.meta.meta = Some(meta.clone());
        let read = std::mem::replace(&mut self.read, Box::new(|_, _| Ok(Vec::new())));
        self.read = Box::new(move |uri, vars| {
            let mut contents = read(uri, vars)?;
            for c in &mut contents {
                c.meta.get_or_insert_with(|| meta.clone());
            }
            Ok(contents)
        });
        self
    }
}

/// The MIME type of an MCP Apps view.
pub const VIEW_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// A family of resources named by a URI template such as `notes://{id}`.
pub struct Template {
    pub(crate) meta: wit::ResourceTemplate,
    pub(crate) pattern: UriTemplate,
    pub(crate) read: Reader,
}

impl Template {
    /// A template named `name`; `f` reads a matching URI, given its variables.
    pub fn new<R, E, F>(uri_template: impl Into<String>, name: impl Into<String>, f: F) -> Self
    where
        R: IntoContents + 'static,
        E: std::fmt::Display + 'static,
        F: Fn(&str, &UriVars) -> Result<R, E> + 'static,
    {
        let uri_template = uri_template.into();
        let read = reader(f);
        Template {
            pattern: UriTemplate::parse(&uri_template),
            meta: wit::ResourceTemplate {
                uri_template,
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                annotations: None,
                icons: Vec::new(),
                meta: None,
            },
            read,
        }
    }

    /// Sets the MIME type of every matching resource.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        let mime: String = mime_type.into();
        self.meta.mime_type = Some(mime.clone());
        let read = std::mem::replace(&mut self.read, Box::new(|_, _| Ok(Vec::new())));
        self.read = Box::new(move |uri, vars| {
            let mut contents = read(uri, vars)?;
            for c in &mut contents {
                c.mime_type.get_or_insert_with(|| mime.clone());
            }
            Ok(contents)
        });
        self
    }

    /// Sets what the resources are.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.meta.description = Some(description.into());
        self
    }

    /// Sets a human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.meta.title = Some(title.into());
        self
    }
}

/// The variables a URI matched in a template, in template order, with
/// their `%`-escapes decoded (`Ada%20L` is `Ada L`; a malformed escape is
/// kept as it is, and bytes that are not UTF-8 become U+FFFD).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct UriVars(Vec<(String, String)>);

impl UriVars {
    /// The value of variable `name`, if the template has it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The variables of `uri` if it matches `template`.
    pub(crate) fn of(template: &UriTemplate, uri: &str) -> Option<UriVars> {
        let captures = template.captures(uri)?;
        Some(UriVars(
            captures
                .into_iter()
                .map(|(name, value)| {
                    let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
                    (name.to_owned(), value.into_owned())
                })
                .collect(),
        ))
    }
}

pub(crate) fn unmatched(uri: &str) -> Error {
    Error::NotFound(format!("no resource at {uri}"))
}
