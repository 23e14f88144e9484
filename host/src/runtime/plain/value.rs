//! JSON arguments to component values and component values back to JSON,
//! in the shapes [`super::schema`] describes.

use serde::ser::{Error as _, Serialize, SerializeMap, Serializer};
use serde_json::Value;
use wasmtime::component::types::Type;
use wasmtime::component::Val;

/// The most component values one call's arguments may become (about
/// 40 MiB of host memory); the request-size limits already keep real
/// arguments far below it.
pub const MAX_ARGUMENT_VALUES: usize = 1 << 20;

/// Converts JSON arguments to component values of the given types.
pub struct Lowering {
    values: usize,
}

impl Lowering {
    /// A conversion with the whole budget of one call.
    pub fn new() -> Self {
        Lowering { values: 0 }
    }

    /// `json` as a value of `ty`; the error names where in `json` it failed.
    pub fn value(&mut self, ty: &Type, json: &Value) -> Result<Val, String> {
        self.values += 1;
        if self.values > MAX_ARGUMENT_VALUES {
            return Err(format!(
                "the arguments are more than {MAX_ARGUMENT_VALUES} values"
            ));
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
                    values.push(self.value(&ty, item).map_err(|e| at(&i.to_string(), e))?);
                }
                Val::Tuple(values)
            }
            Type::Variant(variant) => {
                let (name, payload) = single(json)?;
                let case = variant
                    .cases()
                    .find(|c| c.name == name)
                    .ok_or_else(|| format!("`{name}` is not one of its cases"))?;
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
                    _ => return Err("expected {\"ok\": …} or {\"err\": …}".to_owned()),
                }
            }
            other => leaf(other, json)?,
        })
    }

    /// A `map<string, V>` from a JSON object.
    fn map(&mut self, value_ty: &Type, json: &Value) -> Result<Val, String> {
        let object = json
            .as_object()
            .ok_or_else(|| expected("an object", json))?;
        let mut pairs = Vec::with_capacity(object.len());
        for (key, value) in object {
            let value = self.value(value_ty, value).map_err(|e| at(key, e))?;
            pairs.push((Val::String(key.clone()), value));
        }
        Ok(Val::Map(pairs))
    }

    /// An object's members (a record's fields, a function's parameters) in
    /// declaration order; an absent `option` member is `none`.
    pub fn members<'a>(
        &mut self,
        members: impl Iterator<Item = (&'a str, Type)>,
        json: &Value,
    ) -> Result<Vec<(String, Val)>, String> {
        let object = json
            .as_object()
            .ok_or_else(|| expected("an object", json))?;
        let mut values = Vec::new();
        let mut known = 0;
        for (name, ty) in members {
            let value = match (object.get(name), &ty) {
                (Some(value), _) => {
                    known += 1;
                    self.value(&ty, value).map_err(|e| at(name, e))?
                }
                (None, Type::Option(_)) => Val::Option(None),
                (None, _) => return Err(format!("`{name}` is missing")),
            };
            values.push((name.to_owned(), value));
        }
        if known != object.len() {
            let names: Vec<&str> = values.iter().map(|(n, _)| n.as_str()).collect();
            if let Some(extra) = object.keys().find(|k| !names.contains(&k.as_str())) {
                return Err(format!("`{extra}` is not expected"));
            }
        }
        Ok(values)
    }

    fn items(&mut self, ty: &Type, items: &[Value]) -> Result<Vec<Val>, String> {
        let mut values = Vec::with_capacity(items.len().min(MAX_ARGUMENT_VALUES));
        for (i, item) in items.iter().enumerate() {
            values.push(self.value(ty, item).map_err(|e| at(&i.to_string(), e))?);
        }
        Ok(values)
    }

    fn payload(
        &mut self,
        ty: Option<&Type>,
        json: Option<&Value>,
        name: &str,
    ) -> Result<Option<Box<Val>>, String> {
        match (ty, json) {
            (Some(ty), Some(json)) => Ok(Some(Box::new(
                self.value(ty, json).map_err(|e| at(name, e))?,
            ))),
            (None, None | Some(Value::Null)) => Ok(None),
            (Some(_), None) => Err(format!("`{name}` needs a value: {{\"{name}\": …}}")),
            (None, Some(_)) => Err(format!("`{name}` takes no value")),
        }
    }
}

/// A case written as `"name"` or `{"name": payload}`.
fn single(json: &Value) -> Result<(&str, Option<&Value>), String> {
    match json {
        Value::String(name) => Ok((name, None)),
        Value::Object(object) if object.len() == 1 => {
            let (name, payload) = object.iter().next().expect("one member");
            Ok((name, Some(payload)))
        }
        other => Err(expected("a case's name or an object of one member", other)),
    }
}

fn at(place: &str, error: String) -> String {
    format!("{place}: {error}")
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

fn expected(what: &str, json: &Value) -> String {
    format!("expected {what}, found {}", kind(json))
}

fn number(json: &Value) -> Result<f64, String> {
    json.as_f64().ok_or_else(|| expected("a number", json))
}

fn string(json: &Value) -> Result<&str, String> {
    json.as_str().ok_or_else(|| expected("a string", json))
}

fn array(json: &Value) -> Result<&[Value], String> {
    json.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| expected("an array", json))
}

/// A component value written as JSON (non-finite floats become `null`).
pub struct Json<'a>(pub &'a Val);

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
fn expect_len(wanted: usize, found: usize) -> Result<(), String> {
    if wanted == found {
        return Ok(());
    }
    Err(format!("expected {wanted} items, found {found}"))
}

/// A value of a type with no values inside it (numbers, text, enums,
/// flags), or why `json` is not one.
fn leaf(ty: &Type, json: &Value) -> Result<Val, String> {
    let int = |min: i128, max: i128| -> Result<i128, String> {
        let n = json
            .as_i64()
            .map(i128::from)
            .or_else(|| json.as_u64().map(i128::from))
            .ok_or_else(|| format!("expected an integer, found {}", kind(json)))?;
        if n < min || n > max {
            return Err(format!("{n} is outside {min}..={max}"));
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
                _ => return Err("expected a string of one character".to_owned()),
            }
        }
        Type::String => Val::String(string(json)?.to_owned()),
        Type::Enum(e) => {
            let name = string(json)?;
            if !e.names().any(|n| n == name) {
                return Err(format!("`{name}` is not one of its cases"));
            }
            Val::Enum(name.to_owned())
        }
        Type::Flags(flags) => {
            let mut set = Vec::new();
            for item in array(json)? {
                let name = string(item)?;
                if !flags.names().any(|n| n == name) {
                    return Err(format!("`{name}` is not one of its flags"));
                }
                if !set.iter().any(|s| s == name) {
                    set.push(name.to_owned());
                }
            }
            Val::Flags(set)
        }
        _ => return Err("this type has no JSON form".to_owned()),
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
