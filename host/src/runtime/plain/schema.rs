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

use std::collections::BTreeMap;

use serde::Serialize;
use wasmtime::component::types::Type;

/// The deepest type served; WIT types are trees, but a hostile component
/// may nest them arbitrarily deep.
pub(super) const MAX_DEPTH: usize = 32;
/// The most schema nodes one function's types may expand to (a type used
/// twice is written out twice, so a small component could otherwise
/// describe an exponentially large schema). Every member counts: each
/// parameter, record field, tuple member, variant case, enum case and
/// flag, counted before anything is written for them.
pub(super) const MAX_NODES: usize = 4096;
/// The most bytes of names (fields, cases, flags) one function's schemas
/// may hold, counted as [`MAX_NODES`] is.
pub(super) const MAX_NAME_BYTES: usize = 64 << 10;

/// Why a type has no schema.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unsupported {
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

/// One JSON Schema node, of the keywords these schemas use. Unset
/// keywords are left out; the fields are in the keys' byte order, so the
/// text is the same as a sorted JSON object's.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Schema {
    /// What an object's other members may be: `false` (none) or a schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<Subschema>,
    /// The schemas one of which the value matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<Schema>>,
    /// The one value allowed.
    #[serde(rename = "const", skip_serializing_if = "Option::is_none")]
    pub constant: Option<String>,
    /// The values allowed.
    #[serde(rename = "enum", skip_serializing_if = "Option::is_none")]
    pub enumeration: Option<Vec<String>>,
    /// What an array's items (after its `prefixItems`) may be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Subschema>,
    /// The most items of an array.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<usize>,
    /// The most characters of a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<usize>,
    /// The largest integer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<i128>,
    /// The fewest items of an array.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<usize>,
    /// The fewest characters of a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<usize>,
    /// The smallest integer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<i128>,
    /// The schemas exactly one of which the value matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<Schema>>,
    /// The schemas of an array's first items, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_items: Option<Vec<Schema>>,
    /// An object's members, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, Schema>>,
    /// The members an object must have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// The JSON type (`object`, `string`, …).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// Whether an array's items are all different.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique_items: Option<bool>,
}

/// A schema where JSON Schema also takes `true` or `false`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(super) enum Subschema {
    /// `false`: nothing is allowed there.
    Nothing(bool),
    /// Values matching this schema.
    Schema(Box<Schema>),
}

impl Subschema {
    /// `false`.
    pub(super) const NOTHING: Subschema = Subschema::Nothing(false);
}

impl From<Schema> for Subschema {
    fn from(schema: Schema) -> Self {
        Subschema::Schema(Box::new(schema))
    }
}

impl Schema {
    /// `{"type": kind}`.
    pub(super) fn of_type(kind: &'static str) -> Self {
        Schema {
            kind: Some(kind),
            ..Schema::default()
        }
    }

    /// An integer from `min` to `max`.
    fn integer(min: i128, max: i128) -> Self {
        Schema {
            minimum: Some(min),
            maximum: Some(max),
            ..Schema::of_type("integer")
        }
    }

    /// An array of `items`.
    fn array(items: Schema) -> Self {
        Schema {
            items: Some(items.into()),
            ..Schema::of_type("array")
        }
    }

    /// An object with these members, of which `required` must be there.
    pub(super) fn object(properties: BTreeMap<String, Schema>, required: Vec<String>) -> Self {
        Schema {
            properties: Some(properties),
            required: Some(required),
            ..Schema::of_type("object")
        }
    }

    /// This object schema, refusing members it does not name.
    fn closed(self) -> Self {
        Schema {
            additional_properties: Some(Subschema::NOTHING),
            ..self
        }
    }
}

impl std::fmt::Display for Schema {
    /// The schema as compact JSON.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self).map_err(|_| std::fmt::Error)?)
    }
}

/// Writes schemas under one function's node budget.
pub(super) struct SchemaWriter {
    nodes: usize,
    name_bytes: usize,
}

impl SchemaWriter {
    /// A writer with the whole budget of one function.
    pub(super) fn new() -> Self {
        SchemaWriter {
            nodes: 0,
            name_bytes: 0,
        }
    }

    /// Counts `count` members named by `names` against the budget, before
    /// anything is written for them.
    pub(super) fn charge<'a>(
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
    pub(super) fn object<'a>(
        &mut self,
        members: impl Iterator<Item = (&'a str, Type)>,
        depth: usize,
    ) -> Result<Schema, Unsupported> {
        self.count(depth)?;
        let mut properties = BTreeMap::new();
        let mut required = Vec::new();
        for (name, ty) in members {
            if !matches!(ty, Type::Option(_)) {
                required.push(name.to_owned());
            }
            properties.insert(name.to_owned(), self.of(&ty, depth + 1)?);
        }
        Ok(Schema::object(properties, required).closed())
    }

    /// The schema of `ty`.
    pub(super) fn of(&mut self, ty: &Type, depth: usize) -> Result<Schema, Unsupported> {
        self.count(depth)?;
        Ok(match ty {
            Type::Bool => Schema::of_type("boolean"),
            Type::S8 => Schema::integer(i8::MIN.into(), i8::MAX.into()),
            Type::U8 => Schema::integer(0, u8::MAX.into()),
            Type::S16 => Schema::integer(i16::MIN.into(), i16::MAX.into()),
            Type::U16 => Schema::integer(0, u16::MAX.into()),
            Type::S32 => Schema::integer(i32::MIN.into(), i32::MAX.into()),
            Type::U32 => Schema::integer(0, u32::MAX.into()),
            Type::S64 => Schema::integer(i64::MIN.into(), i64::MAX.into()),
            Type::U64 => Schema::integer(0, u64::MAX.into()),
            Type::Float32 | Type::Float64 => Schema::of_type("number"),
            Type::Char => Schema {
                min_length: Some(1),
                max_length: Some(1),
                ..Schema::of_type("string")
            },
            Type::String => Schema::of_type("string"),
            Type::List(list) => Schema::array(self.of(&list.ty(), depth + 1)?),
            Type::FixedLengthList(list) => {
                let n = list.len() as usize;
                Schema {
                    min_items: Some(n),
                    max_items: Some(n),
                    ..Schema::array(self.of(&list.ty(), depth + 1)?)
                }
            }
            Type::Map(map) => {
                if !matches!(map.key(), Type::String) {
                    return Err(Unsupported::Kind("a map whose keys are not strings"));
                }
                Schema {
                    additional_properties: Some(self.of(&map.value(), depth + 1)?.into()),
                    ..Schema::of_type("object")
                }
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
                Schema {
                    prefix_items: Some(items),
                    items: Some(Subschema::NOTHING),
                    min_items: Some(n),
                    max_items: Some(n),
                    ..Schema::of_type("array")
                }
            }
            Type::Variant(variant) => {
                self.charge(variant.cases().len(), variant.cases().map(|c| c.name))?;
                let mut cases = Vec::new();
                for case in variant.cases() {
                    cases.push(match &case.ty {
                        None => Schema {
                            constant: Some(case.name.to_owned()),
                            ..Schema::default()
                        },
                        Some(payload) => self.single(case.name, Some(payload), depth + 1)?,
                    });
                }
                Schema {
                    one_of: Some(cases),
                    ..Schema::default()
                }
            }
            Type::Enum(e) => {
                self.charge(e.names().len(), e.names())?;
                Schema {
                    enumeration: Some(e.names().map(str::to_owned).collect()),
                    ..Schema::of_type("string")
                }
            }
            Type::Flags(flags) => {
                self.charge(flags.names().len(), flags.names())?;
                Schema {
                    unique_items: Some(true),
                    ..Schema::array(Schema {
                        enumeration: Some(flags.names().map(str::to_owned).collect()),
                        ..Schema::of_type("string")
                    })
                }
            }
            Type::Option(option) => Schema {
                any_of: Some(vec![
                    self.of(&option.ty(), depth + 1)?,
                    Schema::of_type("null"),
                ]),
                ..Schema::default()
            },
            Type::Result(result) => Schema {
                one_of: Some(vec![
                    self.single("ok", result.ok().as_ref(), depth + 1)?,
                    self.single("err", result.err().as_ref(), depth + 1)?,
                ]),
                ..Schema::default()
            },
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
    ) -> Result<Schema, Unsupported> {
        let payload = match payload {
            Some(ty) => self.of(ty, depth + 1)?,
            None => Schema::of_type("null"),
        };
        let properties = BTreeMap::from([(name.to_owned(), payload)]);
        Ok(Schema::object(properties, vec![name.to_owned()]).closed())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The text of `schema`, and that it is the text of the same JSON
    /// written as a (sorted) JSON object.
    fn text(schema: &Schema) -> String {
        let text = schema.to_string();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value.to_string(), text, "members in sorted order");
        text
    }

    #[test]
    fn schemas_are_written_as_sorted_json_objects() {
        assert_eq!(
            text(&Schema::integer(i64::MIN.into(), u64::MAX.into())),
            r#"{"maximum":18446744073709551615,"minimum":-9223372036854775808,"type":"integer"}"#
        );
        let char = Schema {
            min_length: Some(1),
            max_length: Some(1),
            ..Schema::of_type("string")
        };
        let pair = Schema {
            prefix_items: Some(vec![char.clone(), Schema::of_type("null")]),
            items: Some(Subschema::NOTHING),
            min_items: Some(2),
            max_items: Some(2),
            ..Schema::of_type("array")
        };
        let flags = Schema {
            unique_items: Some(true),
            ..Schema::array(Schema {
                enumeration: Some(vec!["a".into(), "b".into()]),
                ..Schema::of_type("string")
            })
        };
        let case = Schema {
            constant: Some("none".into()),
            ..Schema::default()
        };
        let option = Schema {
            any_of: Some(vec![case, Schema::of_type("boolean")]),
            ..Schema::default()
        };
        let map = Schema {
            additional_properties: Some(Schema::of_type("number").into()),
            ..Schema::of_type("object")
        };
        let properties = BTreeMap::from([
            ("pair".to_owned(), pair),
            ("flags".to_owned(), flags),
            ("option".to_owned(), option),
            ("map".to_owned(), map),
        ]);
        let object = Schema::object(properties, vec!["pair".into(), "flags".into()]).closed();
        text(&object);
        assert_eq!(
            serde_json::to_value(&object).unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "pair": {"type": "array", "prefixItems": [
                        {"type": "string", "minLength": 1, "maxLength": 1}, {"type": "null"}],
                        "items": false, "minItems": 2, "maxItems": 2},
                    "flags": {"type": "array", "uniqueItems": true,
                        "items": {"type": "string", "enum": ["a", "b"]}},
                    "option": {"anyOf": [{"const": "none"}, {"type": "boolean"}]},
                    "map": {"type": "object", "additionalProperties": {"type": "number"}},
                },
                "required": ["pair", "flags"],
                "additionalProperties": false,
            })
        );
    }
}
