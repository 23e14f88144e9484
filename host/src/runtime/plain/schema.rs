//! JSON Schemas (2020-12) of WIT types, the shape of a plain function's
//! arguments and results on the wire.
//!
//! | WIT | JSON |
//! |---|---|
//! | `bool`, integers, floats | boolean, integer (with its range), number |
//! | `char`, `string` | a string (of one character for `char`) |
//! | `list<T>`, `tuple<…>` | an array (of fixed length for a tuple) |
//! | `record` | an object of its fields; `option` fields may be left out |
//! | `option<T>` | `T` or `null` |
//! | `enum`, `flags` | a case's name; an array of flag names |
//! | `variant` | a case's name, or `{"case": payload}` |
//! | `result<T, E>` | `{"ok": T}` or `{"err": E}` |
//! | `map<string, V>` | an object |
//!
//! Resources, futures, streams and maps with other keys have no JSON form:
//! a function that takes or returns one is not served.

use serde_json::{json, Map, Value};
use wasmtime::component::types::Type;

/// The deepest type served; WIT types are trees, but a hostile component
/// may nest them arbitrarily deep.
pub const MAX_DEPTH: usize = 32;
/// The most schema nodes one function's types may expand to (a type used
/// twice is written out twice, so a small component could otherwise
/// describe an exponentially large schema). Every member counts: each
/// parameter, record field, tuple member, variant case, enum case and
/// flag, counted before anything is written for them.
pub const MAX_NODES: usize = 4096;
/// The most bytes of names (fields, cases, flags) one function's schemas
/// may hold, counted as [`MAX_NODES`] is.
pub const MAX_NAME_BYTES: usize = 64 << 10;

/// Why a type has no schema.
#[derive(Debug, thiserror::Error)]
pub enum Unsupported {
    /// A resource, future, stream, error context or non-string map key.
    #[error("{0} has no JSON form")]
    Kind(&'static str),
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("its types are nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// Expands to more than [`MAX_NODES`] schema nodes.
    #[error("its types expand to more than {MAX_NODES} schema nodes")]
    TooLarge,
    /// Names more than [`MAX_NAME_BYTES`] bytes.
    #[error("its types name more than {MAX_NAME_BYTES} bytes of fields and cases")]
    TooManyNames,
}

/// Writes schemas under one function's node budget.
pub struct SchemaWriter {
    nodes: usize,
    name_bytes: usize,
}

impl SchemaWriter {
    /// A writer with the whole budget of one function.
    pub fn new() -> Self {
        SchemaWriter {
            nodes: 0,
            name_bytes: 0,
        }
    }

    /// Counts `count` members named by `names` against the budget, before
    /// anything is written for them.
    pub fn charge<'a>(
        &mut self,
        count: usize,
        names: impl Iterator<Item = &'a str>,
    ) -> Result<(), Unsupported> {
        self.nodes = self.nodes.saturating_add(count);
        if self.nodes > MAX_NODES {
            return Err(Unsupported::TooLarge);
        }
        for name in names {
            self.name_bytes += name.len();
            if self.name_bytes > MAX_NAME_BYTES {
                return Err(Unsupported::TooManyNames);
            }
        }
        Ok(())
    }

    /// The schema of an object with these named members (a record's fields,
    /// a function's parameters): `option` members may be left out.
    pub fn object<'a>(
        &mut self,
        members: impl Iterator<Item = (&'a str, Type)>,
        depth: usize,
    ) -> Result<Value, Unsupported> {
        self.count(depth)?;
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (name, ty) in members {
            if !matches!(ty, Type::Option(_)) {
                required.push(Value::from(name));
            }
            properties.insert(name.to_owned(), self.of(&ty, depth + 1)?);
        }
        Ok(json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }))
    }

    /// The schema of `ty`.
    pub fn of(&mut self, ty: &Type, depth: usize) -> Result<Value, Unsupported> {
        self.count(depth)?;
        let integer =
            |min: i128, max: i128| json!({"type": "integer", "minimum": min, "maximum": max});
        Ok(match ty {
            Type::Bool => json!({"type": "boolean"}),
            Type::S8 => integer(i8::MIN.into(), i8::MAX.into()),
            Type::U8 => integer(0, u8::MAX.into()),
            Type::S16 => integer(i16::MIN.into(), i16::MAX.into()),
            Type::U16 => integer(0, u16::MAX.into()),
            Type::S32 => integer(i32::MIN.into(), i32::MAX.into()),
            Type::U32 => integer(0, u32::MAX.into()),
            Type::S64 => integer(i64::MIN.into(), i64::MAX.into()),
            Type::U64 => integer(0, u64::MAX.into()),
            Type::Float32 | Type::Float64 => json!({"type": "number"}),
            Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
            Type::String => json!({"type": "string"}),
            Type::List(list) => json!({"type": "array", "items": self.of(&list.ty(), depth + 1)?}),
            Type::FixedLengthList(list) => json!({
                "type": "array",
                "items": self.of(&list.ty(), depth + 1)?,
                "minItems": list.len(),
                "maxItems": list.len(),
            }),
            Type::Map(map) => {
                if !matches!(map.key(), Type::String) {
                    return Err(Unsupported::Kind("a map whose keys are not strings"));
                }
                json!({"type": "object", "additionalProperties": self.of(&map.value(), depth + 1)?})
            }
            Type::Record(record) => {
                let fields = record.fields();
                self.charge(fields.len(), record.fields().map(|f| f.name))?;
                self.object(fields.map(|f| (f.name, f.ty)), depth + 1)?
            }
            Type::Tuple(tuple) => {
                self.charge(tuple.types().len(), std::iter::empty())?;
                let items = tuple
                    .types()
                    .map(|t| self.of(&t, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                let n = items.len();
                json!({"type": "array", "prefixItems": items, "items": false, "minItems": n, "maxItems": n})
            }
            Type::Variant(variant) => {
                self.charge(variant.cases().len(), variant.cases().map(|c| c.name))?;
                let mut cases = Vec::new();
                for case in variant.cases() {
                    cases.push(match &case.ty {
                        None => json!({"const": case.name}),
                        Some(payload) => self.single(case.name, Some(payload), depth + 1)?,
                    });
                }
                json!({"oneOf": cases})
            }
            Type::Enum(e) => {
                self.charge(e.names().len(), e.names())?;
                json!({"type": "string", "enum": e.names().collect::<Vec<_>>()})
            }
            Type::Flags(flags) => {
                self.charge(flags.names().len(), flags.names())?;
                json!({
                    "type": "array",
                    "items": {"type": "string", "enum": flags.names().collect::<Vec<_>>()},
                    "uniqueItems": true,
                })
            }
            Type::Option(option) => {
                json!({"anyOf": [self.of(&option.ty(), depth + 1)?, {"type": "null"}]})
            }
            Type::Result(result) => json!({"oneOf": [
                self.single("ok", result.ok().as_ref(), depth + 1)?,
                self.single("err", result.err().as_ref(), depth + 1)?,
            ]}),
            Type::Own(_) | Type::Borrow(_) => return Err(Unsupported::Kind("a resource")),
            Type::Future(_) => return Err(Unsupported::Kind("a future")),
            Type::Stream(_) => return Err(Unsupported::Kind("a stream")),
            Type::ErrorContext => return Err(Unsupported::Kind("an error context")),
        })
    }

    /// `{"name": payload}`, the payload `null` when there is none.
    fn single(
        &mut self,
        name: &str,
        payload: Option<&Type>,
        depth: usize,
    ) -> Result<Value, Unsupported> {
        let payload = match payload {
            Some(ty) => self.of(ty, depth + 1)?,
            None => json!({"type": "null"}),
        };
        Ok(json!({
            "type": "object",
            "properties": {name: payload},
            "required": [name],
            "additionalProperties": false,
        }))
    }

    fn count(&mut self, depth: usize) -> Result<(), Unsupported> {
        if depth > MAX_DEPTH {
            return Err(Unsupported::TooDeep);
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Unsupported::TooLarge);
        }
        Ok(())
    }
}
