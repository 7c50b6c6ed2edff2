//! Values tidal reads from labels and annotations, keeping malformed ones visible instead of guessing.
//!
//! A malformed value must never widen disruption, so it is not silently treated as absent: it is carried to
//! the `invalid` gate, which refuses the pod and reports the key and value.

use std::{collections::BTreeMap, fmt, str::FromStr};

use serde::Serialize;

/// A setting read from an object's labels or annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Setting<T> {
    #[default]
    Unset,
    Valid(T),
    /// Boxed: rare, and four strings inline would make every setting of every cached pod 96 bytes.
    Invalid(Box<InvalidValue>),
}

/// A label or annotation whose value tidal could not use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InvalidValue {
    /// `kind namespace/name` of the object carrying it.
    pub object: String,
    pub key: String,
    pub value: String,
    pub error: String,
}

impl fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}={:?}: {}",
            self.object, self.key, self.value, self.error
        )
    }
}

impl<T> Setting<T> {
    pub fn is_set(&self) -> bool {
        !matches!(self, Setting::Unset)
    }

    /// This setting if it says anything (valid or not), else `fallback`.
    pub fn or_else(self, fallback: impl FnOnce() -> Setting<T>) -> Setting<T> {
        match self {
            Setting::Unset => fallback(),
            said => said,
        }
    }

    pub fn invalid(&self) -> Option<&InvalidValue> {
        match self {
            Setting::Invalid(invalid) => Some(invalid),
            _ => None,
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Setting<U> {
        match self {
            Setting::Unset => Setting::Unset,
            Setting::Valid(v) => Setting::Valid(f(v)),
            Setting::Invalid(i) => Setting::Invalid(i),
        }
    }

    pub fn valid(&self) -> Option<&T> {
        match self {
            Setting::Valid(value) => Some(value),
            _ => None,
        }
    }
}

/// Where a setting is read from, in order: the first map holding any of the keys wins.
pub struct Sources<'a> {
    pub object: &'a str,
    pub maps: &'a [Option<&'a BTreeMap<String, String>>],
}

impl Sources<'_> {
    /// Reads the first of `keys` found in the first map that has one, parsing it with `parse`.
    pub fn read<T, E: fmt::Display>(
        &self,
        keys: &[&str],
        parse: impl Fn(&str) -> Result<T, E>,
    ) -> Setting<T> {
        for map in self.maps.iter().flatten() {
            for key in keys {
                if let Some(value) = map.get(*key) {
                    return match parse(value) {
                        Ok(parsed) => Setting::Valid(parsed),
                        Err(error) => Setting::Invalid(Box::new(InvalidValue {
                            object: self.object.to_owned(),
                            key: (*key).to_owned(),
                            value: value.clone(),
                            error: error.to_string(),
                        })),
                    };
                }
            }
        }
        Setting::Unset
    }

    pub fn read_parsed<T: FromStr>(&self, keys: &[&str]) -> Setting<T>
    where
        T::Err: fmt::Display,
    {
        self.read(keys, str::parse::<T>)
    }
}

/// Go's `strconv.ParseBool`, which Volcano uses for its boolean annotations.
pub(crate) fn parse_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err("expected true or false".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_map_with_a_key_wins_and_errors_keep_key_and_value() {
        let labels = BTreeMap::from([("a".to_owned(), "yes".to_owned())]);
        let annotations = BTreeMap::from([("a".to_owned(), "true".to_owned())]);
        let sources = Sources {
            object: "Pod ns/p",
            maps: &[Some(&labels), Some(&annotations)],
        };
        let setting = sources.read(&["a"], parse_bool);
        let invalid = setting
            .invalid()
            .expect("label is read first and is invalid");
        assert_eq!((invalid.key.as_str(), invalid.value.as_str()), ("a", "yes"));
        assert!(invalid.to_string().contains("Pod ns/p"));

        let sources = Sources {
            object: "Pod ns/p",
            maps: &[None, Some(&annotations)],
        };
        assert_eq!(sources.read(&["a"], parse_bool), Setting::Valid(true));
        assert_eq!(sources.read(&["b"], parse_bool), Setting::Unset);
    }
}
