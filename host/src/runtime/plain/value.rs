//! JSON arguments to component values and component values back to JSON,
//! in the shapes [`super::schema`] describes.

use serde::ser::{Error as _, Serialize, SerializeMap, Serializer};
use serde_json::Value;
use wasmtime::component::types::Type;
use wasmtime::component::Val;

/// The most component values one call's arguments may become (about
/// 40 MiB of host memory); the request-size limits already keep real
/// arguments far below it.
pub(super) const MAX_ARGUMENT_VALUES: usize = 1 << 20;

/// Why JSON arguments are not values of their types: what, and where in
/// the arguments (shown as `a: 0: b: what`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{problem}", Place(.place))]
pub struct LoweringError {
    /// The members and indexes leading to the value, innermost first.
    place: Vec<String>,
    /// What is wrong with the value there.
    pub problem: Problem,
}

impl LoweringError {
    /// The same error, at member or index `place` of the enclosing value.
    fn at(mut self, place: &str) -> Self {
        self.place.push(place.to_owned());
        self
    }
}

impl From<Problem> for LoweringError {
    fn from(problem: Problem) -> Self {
        LoweringError {
            place: Vec::new(),
            problem,
        }
    }
}

/// A place written outermost first, each part followed by `: `.
struct Place<'a>(&'a [String]);

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().rev().try_for_each(|p| write!(f, "{p}: "))
    }
}

/// What is wrong with one JSON value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    /// The arguments expand to more than [`MAX_ARGUMENT_VALUES`] values.
    #[error("the arguments are more than {MAX_ARGUMENT_VALUES} values")]
    TooManyValues,
    /// A JSON value of the wrong kind.
    #[error("expected {expected}, found {found}")]
    Kind {
        /// What the type needs.
        expected: &'static str,
        /// What the value is.
        found: &'static str,
    },
    /// An array of the wrong length for a tuple or fixed-length list.
    #[error("expected {wanted} items, found {found}")]
    Length {
        /// The type's length.
        wanted: usize,
        /// The array's.
        found: usize,
    },
    /// An integer outside its type's range.
    #[error("{value} is outside {min}..={max}")]
    OutOfRange {
        /// The integer.
        value: i128,
        /// The type's least value.
        min: i128,
        /// Its greatest.
        max: i128,
    },
    /// A `char` that is not one character.
    #[error("expected a string of one character")]
    NotOneChar,
    /// A case a variant or enum does not have.
    #[error("`{0}` is not one of its cases")]
    UnknownCase(String),
    /// A flag the flags type does not have.
    #[error("`{0}` is not one of its flags")]
    UnknownFlag(String),
    /// A `result` written as neither `ok` nor `err`.
    #[error("expected {{\"ok\": …}} or {{\"err\": …}}")]
    NotOkOrErr,
    /// A required member left out.
    #[error("`{0}` is missing")]
    Missing(String),
    /// A member the type does not name.
    #[error("`{0}` is not expected")]
    Unexpected(String),
    /// A case with a payload written without one.
    #[error("`{0}` needs a value: {{\"{0}\": …}}")]
    NeedsValue(String),
    /// A case without a payload written with one.
    #[error("`{0}` takes no value")]
    TakesNoValue(String),
    /// A type with no JSON form.
    #[error("this type has no JSON form")]
    NoJsonForm,
}

/// Converts JSON arguments to component values of the given types.
pub(super) struct Lowering {
    values: usize,
}

impl Lowering {
    /// A conversion with the whole budget of one call.
    pub(super) fn new() -> Self {
        Lowering { values: 0 }
    }

    /// `json` as a value of `ty`; the error names where in `json` it failed.
    pub(super) fn value(&mut self, ty: &Type, json: &Value) -> Result<Val, LoweringError> {
        self.values += 1;
        if self.values > MAX_ARGUMENT_VALUES {
            return Err(Problem::TooManyValues.into());
        }
        Ok(match ty {
            Type::List(list) => Val::List(self.items(&list.ty(), array(json)?)?),
            Type::FixedLengthList(list) => {
                let items = array(json)?;
                expect_len(list.len() as usize, items.len())?;
                Val::FixedLengthList(self.items(&list.ty(), items)?)
            }
            Type::Map(map) => self.map(&map.value(), json)?,
            Type::Record(record) => {
                let fields = record.fields().map(|f| (f.name, f.ty));
                Val::Record(self.members(fields, json)?)
            }
            Type::Tuple(tuple) => {
                let items = array(json)?;
                expect_len(tuple.types().len(), items.len())?;
                let mut values = Vec::with_capacity(items.len());
                for (i, (ty, item)) in tuple.types().zip(items).enumerate() {
                    values.push(self.value(&ty, item).map_err(|e| e.at(&i.to_string()))?);
                }
                Val::Tuple(values)
            }
            Type::Variant(variant) => {
                let (name, payload) = single(json)?;
                let case = variant
                    .cases()
                    .find(|c| c.name == name)
                    .ok_or_else(|| Problem::UnknownCase(name.to_owned()))?;
                let payload = self.payload(case.ty.as_ref(), payload, name)?;
                Val::Variant(name.to_owned(), payload)
            }
            Type::Option(option) => match json {
                Value::Null => Val::Option(None),
                some => Val::Option(Some(Box::new(self.value(&option.ty(), some)?))),
            },
            Type::Result(result) => {
                let (name, payload) = single(json)?;
                match name {
                    "ok" => Val::Result(Ok(self.payload(result.ok().as_ref(), payload, name)?)),
                    "err" => {
                        Val::Result(Err(self.payload(result.err().as_ref(), payload, name)?))
                    }
                    _ => return Err(Problem::NotOkOrErr.into()),
                }
            }
            other => leaf(other, json)?,
        })
    }

    /// A `map<string, V>` from a JSON object.
    fn map(&mut self, value_ty: &Type, json: &Value) -> Result<Val, LoweringError> {
        let object = json
            .as_object()
            .ok_or_else(|| expected("an object", json))?;
        let mut pairs = Vec::with_capacity(object.len());
        for (key, value) in object {
            let value = self.value(value_ty, value).map_err(|e| e.at(key))?;
            pairs.push((Val::String(key.clone()), value));
        }
        Ok(Val::Map(pairs))
    }

    /// An object's members (a record's fields, a function's parameters) in
    /// declaration order; an absent `option` member is `none`.
    pub(super) fn members<'a>(
        &mut self,
        members: impl Iterator<Item = (&'a str, Type)>,
        json: &Value,
    ) -> Result<Vec<(String, Val)>, LoweringError> {
        let object = json
            .as_object()
            .ok_or_else(|| expected("an object", json))?;
        let mut values = Vec::new();
        let mut known = 0;
        for (name, ty) in members {
            let value = match (object.get(name), &ty) {
                (Some(value), _) => {
                    known += 1;
                    self.value(&ty, value).map_err(|e| e.at(name))?
                }
                (None, Type::Option(_)) => Val::Option(None),
                (None, _) => return Err(Problem::Missing(name.to_owned()).into()),
            };
            values.push((name.to_owned(), value));
        }
        if known != object.len() {
            let names: Vec<&str> = values.iter().map(|(n, _)| n.as_str()).collect();
            if let Some(extra) = object.keys().find(|k| !names.contains(&k.as_str())) {
                return Err(Problem::Unexpected(extra.clone()).into());
            }
        }
        Ok(values)
    }

    fn items(&mut self, ty: &Type, items: &[Value]) -> Result<Vec<Val>, LoweringError> {
        let mut values = Vec::with_capacity(items.len().min(MAX_ARGUMENT_VALUES));
        for (i, item) in items.iter().enumerate() {
            values.push(self.value(ty, item).map_err(|e| e.at(&i.to_string()))?);
        }
        Ok(values)
    }

    fn payload(
        &mut self,
        ty: Option<&Type>,
        json: Option<&Value>,
        name: &str,
    ) -> Result<Option<Box<Val>>, LoweringError> {
        match (ty, json) {
            (Some(ty), Some(json)) => Ok(Some(Box::new(
                self.value(ty, json).map_err(|e| e.at(name))?,
            ))),
            (None, None | Some(Value::Null)) => Ok(None),
            (Some(_), None) => Err(Problem::NeedsValue(name.to_owned()).into()),
            (None, Some(_)) => Err(Problem::TakesNoValue(name.to_owned()).into()),
        }
    }
}

/// A case written as `"name"` or `{"name": payload}`.
fn single(json: &Value) -> Result<(&str, Option<&Value>), Problem> {
    match json {
        Value::String(name) => Ok((name, None)),
        Value::Object(object) if object.len() == 1 => {
            let (name, payload) = object.iter().next().expect("one member");
            Ok((name, Some(payload)))
        }
        other => Err(expected("a case's name or an object of one member", other)),
    }
}

fn kind(json: &Value) -> &'static str {
    match json {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expected(what: &'static str, json: &Value) -> Problem {
    Problem::Kind {
        expected: what,
        found: kind(json),
    }
}

fn number(json: &Value) -> Result<f64, Problem> {
    json.as_f64().ok_or_else(|| expected("a number", json))
}

fn string(json: &Value) -> Result<&str, Problem> {
    json.as_str().ok_or_else(|| expected("a string", json))
}

fn array(json: &Value) -> Result<&[Value], Problem> {
    json.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| expected("an array", json))
}

/// A component value written as JSON (non-finite floats become `null`).
pub(super) struct Json<'a>(pub &'a Val);

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let case = |s: S, name: &str, payload: Option<&Val>| {
            let mut map = s.serialize_map(Some(1))?;
            map.serialize_entry(name, &payload.map(Json))?;
            map.end()
        };
        match self.0 {
            Val::Bool(b) => s.serialize_bool(*b),
            Val::S8(n) => s.serialize_i8(*n),
            Val::U8(n) => s.serialize_u8(*n),
            Val::S16(n) => s.serialize_i16(*n),
            Val::U16(n) => s.serialize_u16(*n),
            Val::S32(n) => s.serialize_i32(*n),
            Val::U32(n) => s.serialize_u32(*n),
            Val::S64(n) => s.serialize_i64(*n),
            Val::U64(n) => s.serialize_u64(*n),
            Val::Float32(f) if f.is_finite() => s.serialize_f32(*f),
            Val::Float64(f) if f.is_finite() => s.serialize_f64(*f),
            Val::Float32(_) | Val::Float64(_) => s.serialize_unit(),
            Val::Char(c) => s.serialize_char(*c),
            Val::String(text) => s.serialize_str(text),
            Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
                s.collect_seq(items.iter().map(Json))
            }
            Val::Map(pairs) => {
                let mut map = s.serialize_map(Some(pairs.len()))?;
                for (key, value) in pairs {
                    let Val::String(key) = key else {
                        return Err(S::Error::custom("a map key that is not a string"));
                    };
                    map.serialize_entry(key, &Json(value))?;
                }
                map.end()
            }
            Val::Record(fields) => s.collect_map(fields.iter().map(|(k, v)| (k, Json(v)))),
            Val::Variant(name, None) | Val::Enum(name) => s.serialize_str(name),
            Val::Variant(name, Some(payload)) => case(s, name, Some(payload)),
            Val::Option(None) => s.serialize_unit(),
            Val::Option(Some(value)) => Json(value).serialize(s),
            Val::Result(Ok(value)) => case(s, "ok", value.as_deref()),
            Val::Result(Err(value)) => case(s, "err", value.as_deref()),
            Val::Flags(names) => s.collect_seq(names),
            Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => {
                Err(S::Error::custom("a value with no JSON form"))
            }
        }
    }
}

/// `found` items where `wanted` are needed: an error unless equal.
fn expect_len(wanted: usize, found: usize) -> Result<(), Problem> {
    if wanted == found {
        return Ok(());
    }
    Err(Problem::Length { wanted, found })
}

/// A value of a type with no values inside it (numbers, text, enums,
/// flags), or why `json` is not one.
fn leaf(ty: &Type, json: &Value) -> Result<Val, Problem> {
    let int = |min: i128, max: i128| -> Result<i128, Problem> {
        let n = json
            .as_i64()
            .map(i128::from)
            .or_else(|| json.as_u64().map(i128::from))
            .ok_or_else(|| expected("an integer", json))?;
        if n < min || n > max {
            return Err(Problem::OutOfRange { value: n, min, max });
        }
        Ok(n)
    };
    // Each narrowing below is within the range just checked.
    Ok(match ty {
        Type::Bool => Val::Bool(json.as_bool().ok_or_else(|| expected("a boolean", json))?),
        Type::S8 => Val::S8(int(i8::MIN.into(), i8::MAX.into())? as i8),
        Type::U8 => Val::U8(int(0, u8::MAX.into())? as u8),
        Type::S16 => Val::S16(int(i16::MIN.into(), i16::MAX.into())? as i16),
        Type::U16 => Val::U16(int(0, u16::MAX.into())? as u16),
        Type::S32 => Val::S32(int(i32::MIN.into(), i32::MAX.into())? as i32),
        Type::U32 => Val::U32(int(0, u32::MAX.into())? as u32),
        Type::S64 => Val::S64(int(i64::MIN.into(), i64::MAX.into())? as i64),
        Type::U64 => Val::U64(int(0, u64::MAX.into())? as u64),
        Type::Float32 => Val::Float32(number(json)? as f32),
        Type::Float64 => Val::Float64(number(json)?),
        Type::Char => {
            let text = string(json)?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(Problem::NotOneChar),
            }
        }
        Type::String => Val::String(string(json)?.to_owned()),
        Type::Enum(e) => {
            let name = string(json)?;
            if !e.names().any(|n| n == name) {
                return Err(Problem::UnknownCase(name.to_owned()));
            }
            Val::Enum(name.to_owned())
        }
        Type::Flags(flags) => {
            let mut set = Vec::new();
            for item in array(json)? {
                let name = string(item)?;
                if !flags.names().any(|n| n == name) {
                    return Err(Problem::UnknownFlag(name.to_owned()));
                }
                if !set.iter().any(|s| s == name) {
                    set.push(name.to_owned());
                }
            }
            Val::Flags(set)
        }
        _ => return Err(Problem::NoJsonForm),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_json_in_the_documented_shapes() {
        let value = Val::Record(vec![
            ("name".into(), Val::String("a\"b".into())),
            ("size".into(), Val::Option(None)),
            (
                "shape".into(),
                Val::Variant("circle".into(), Some(Box::new(Val::Float64(1.5)))),
            ),
            ("point".into(), Val::Variant("point".into(), None)),
            ("done".into(), Val::Result(Ok(None))),
            ("nan".into(), Val::Float32(f32::NAN)),
            ("flags".into(), Val::Flags(vec!["bold".into()])),
        ]);
        let text = serde_json::to_string(&Json(&value)).unwrap();
        assert_eq!(
            text,
            r#"{"name":"a\"b","size":null,"shape":{"circle":1.5},"point":"point","done":{"ok":null},"nan":null,"flags":["bold"]}"#
        );
    }
}
