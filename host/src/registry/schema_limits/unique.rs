//! `uniqueItems`, checked in time linear in the array's size.
//!
//! The schema library's own check hashes items with a fixed hash that
//! ignores structure (`[]`, `[[]]` and `[[], []]` hash alike), so an array
//! of such items is compared pairwise: 40 000 of them took 12 s. Here each
//! item is hashed with a per-check random key, as JSON Schema compares
//! values (`1` equals `1.0`, members in any order), and only items of
//! equal hash are compared.

use jsonschema::paths::{LazyLocation, Location};
use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Number, Value};
use std::collections::hash_map::{Entry, RandomState};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

/// The `uniqueItems` keyword, for `jsonschema::options().with_keyword`.
pub fn keyword<'a>(
    _: &'a Map<String, Value>,
    value: &'a Value,
    path: Location,
) -> Result<Box<dyn Keyword>, ValidationError<'a>> {
    Ok(Box::new(UniqueItems {
        on: value == &Value::Bool(true),
        path,
    }))
}

struct UniqueItems {
    on: bool,
    path: Location,
}

impl Keyword for UniqueItems {
    fn validate<'i>(
        &self,
        instance: &'i Value,
        location: &LazyLocation,
    ) -> Result<(), ValidationError<'i>> {
        match self.on.then(|| first_repeat(instance)).flatten() {
            None => Ok(()),
            Some((first, second)) => Err(ValidationError::custom(
                self.path.clone(),
                location.into(),
                instance,
                format!("items {first} and {second} are equal, and the items must be unique"),
            )),
        }
    }

    fn is_valid(&self, instance: &Value) -> bool {
        !self.on || first_repeat(instance).is_none()
    }
}

/// The indexes of the first two equal items of `value`, if it is an array
/// with any.
pub(super) fn first_repeat(value: &Value) -> Option<(usize, usize)> {
    let Value::Array(items) = value else {
        return None;
    };
    let keys = RandomState::new();
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let mut hasher = keys.build_hasher();
        hash(item, &keys, &mut hasher);
        match seen.entry(hasher.finish()) {
            Entry::Vacant(slot) => {
                slot.insert(vec![index]);
            }
            Entry::Occupied(mut slot) => {
                if let Some(&earlier) = slot.get().iter().find(|&&i| equal(&items[i], item)) {
                    return Some((earlier, index));
                }
                slot.get_mut().push(index);
            }
        }
    }
    None
}

/// A number as JSON Schema compares it: integers by value, whatever their
/// spelling (`1`, `1.0`, `-0.0`), others by their bits.
#[derive(PartialEq, Eq, Hash)]
enum NumberKey {
    Integer(i128),
    Other(u64),
}

fn number_key(number: &Number) -> NumberKey {
    if let Some(n) = number.as_u64() {
        return NumberKey::Integer(n.into());
    }
    if let Some(n) = number.as_i64() {
        return NumberKey::Integer(n.into());
    }
    let f = number.as_f64().unwrap_or(f64::NAN);
    // Every integral f64 under 2^127 converts exactly.
    if f.fract() == 0.0 && f.abs() < 1.7e38 {
        return NumberKey::Integer(f as i128);
    }
    NumberKey::Other(f.to_bits())
}

fn hash(value: &Value, keys: &RandomState, state: &mut impl Hasher) {
    match value {
        Value::Null => state.write_u8(0),
        Value::Bool(b) => {
            state.write_u8(1);
            b.hash(state);
        }
        Value::Number(n) => {
            state.write_u8(2);
            number_key(n).hash(state);
        }
        Value::String(s) => {
            state.write_u8(3);
            s.hash(state);
        }
        Value::Array(items) => {
            state.write_u8(4);
            state.write_usize(items.len());
            for item in items {
                hash(item, keys, state);
            }
        }
        Value::Object(members) => {
            // Members in any order: each hashed alone, the hashes summed.
            state.write_u8(5);
            state.write_usize(members.len());
            let mut sum = 0u64;
            for (key, member) in members {
                let mut one = keys.build_hasher();
                key.hash(&mut one);
                hash(member, keys, &mut one);
                sum = sum.wrapping_add(one.finish());
            }
            state.write_u64(sum);
        }
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => number_key(a) == number_key(b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| equal(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, member)| b.get(key).is_some_and(|other| equal(member, other)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::first_repeat;
    use serde_json::json;

    #[test]
    fn equal_items_are_found_as_json_schema_compares_them() {
        assert_eq!(first_repeat(&json!([1, 2, 1.0])), Some((0, 2)));
        assert_eq!(first_repeat(&json!([0, -0.0])), Some((0, 1)));
        assert_eq!(
            first_repeat(&json!([{"a": 1, "b": [2]}, {"b": [2.0], "a": 1}])),
            Some((0, 1))
        );
        assert_eq!(first_repeat(&json!(["x", "y", "x"])), Some((0, 2)));
        assert_eq!(
            first_repeat(&json!([[], [[]], [[], []], {}, null, 0, false, ""])),
            None
        );
        assert_eq!(
            first_repeat(&json!([1, 1.5, "1", [1], {"1": 1}, true])),
            None
        );
        assert_eq!(
            first_repeat(&json!([18446744073709551615u64, 18446744073709551616.0])),
            None
        );
        assert_eq!(first_repeat(&json!("not an array")), None);
    }

    #[test]
    fn many_items_that_the_library_hashes_alike_are_checked_at_once() {
        // [], [[]], [[[]]], ... and [[], []], ...: one hash in the library.
        let mut items = Vec::new();
        let mut nested = json!([]);
        for _ in 0..100 {
            items.push(nested.clone());
            items.push(json!([nested.clone(), []]));
            nested = json!([nested]);
        }
        for i in 0..40_000 {
            items.push(json!([[i], []]));
        }
        let array = serde_json::Value::Array(items);
        let started = std::time::Instant::now();
        assert_eq!(first_repeat(&array), None);
        assert!(started.elapsed().as_secs() < 5);
    }
}
