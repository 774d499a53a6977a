//! JSON as iolab writes and reads it everywhere (the store's columns, `--json`, imports, the
//! messages between processes and ranks): serde_json's, except that a figure that is not
//! finite (a NaN mean of no runs, an infinite rate of no time) is the string `"NaN"`, `"inf"`
//! or `"-inf"` instead of a `null` no float field could read back, and a `null` where a float
//! is expected (what earlier versions wrote) is read as NaN. Types read through here must not
//! hold floats inside internally tagged enums (serde buffers those past any wrapper; the
//! round-trip tests of every result type would fail).

mod de;
mod ser;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use serde_json::Error;

/// One line of JSON.
pub fn to_string<T: Serialize + ?Sized>(v: &T) -> Result<String, Error> {
    let mut out = Vec::new();
    to_writer(&mut out, v)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// One line of JSON, as bytes.
pub fn to_vec<T: Serialize + ?Sized>(v: &T) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    to_writer(&mut out, v)?;
    Ok(out)
}

/// Indented JSON.
pub fn to_string_pretty<T: Serialize + ?Sized>(v: &T) -> Result<String, Error> {
    let mut out = Vec::new();
    to_writer_pretty(&mut out, v)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

pub fn to_writer<W: std::io::Write, T: Serialize + ?Sized>(w: W, v: &T) -> Result<(), Error> {
    ser::W(v).serialize(&mut serde_json::Serializer::new(w))
}

pub fn to_writer_pretty<W: std::io::Write, T: Serialize + ?Sized>(w: W, v: &T) -> Result<(), Error> {
    ser::W(v).serialize(&mut serde_json::Serializer::pretty(w))
}

pub fn from_str<'a, T: Deserialize<'a>>(s: &'a str) -> Result<T, Error> {
    let mut d = serde_json::Deserializer::from_str(s);
    let v = T::deserialize(de::De(&mut d))?;
    d.end()?;
    Ok(v)
}

pub fn from_slice<'a, T: Deserialize<'a>>(s: &'a [u8]) -> Result<T, Error> {
    let mut d = serde_json::Deserializer::from_slice(s);
    let v = T::deserialize(de::De(&mut d))?;
    d.end()?;
    Ok(v)
}

/// Reads one document from a stream (up to its end, which must hold only white space).
pub fn from_reader<R: std::io::Read, T: DeserializeOwned>(r: R) -> Result<T, Error> {
    let mut d = serde_json::Deserializer::from_reader(r);
    let v = T::deserialize(de::De(&mut d))?;
    d.end()?;
    Ok(v)
}

/// A value as a `serde_json::Value` tree, floats that are not finite as their words.
pub fn to_value<T: Serialize + ?Sized>(v: &T) -> Result<serde_json::Value, Error> {
    ser::W(v).serialize(serde_json::value::Serializer)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    enum Shape {
        Unit,
        New(f64),
        Tuple(f64, f64),
        Named { x: f64 },
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct All {
        a: f64,
        b: f32,
        opt: Option<f64>,
        none: Option<f64>,
        list: Vec<f64>,
        pair: [f64; 2],
        tuple: (u64, f64),
        map: BTreeMap<String, f64>,
        shapes: Vec<Shape>,
        nested: Vec<Option<Vec<f64>>>,
        text: String,
    }

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Every float in every position comes back as it went in: NaN, both infinities, zero of
    /// both signs and the extremes; and nothing else changes.
    #[test]
    fn every_float_round_trips() {
        let vals = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            1e-300,
        ];
        for &v in &vals {
            let x = All {
                a: v,
                b: v as f32,
                opt: Some(v),
                none: None,
                list: vec![v, 1.5, v],
                pair: [v, -v],
                tuple: (7, v),
                map: BTreeMap::from([("k".into(), v)]),
                shapes: vec![Shape::Unit, Shape::New(v), Shape::Tuple(v, 2.0), Shape::Named { x: v }],
                nested: vec![None, Some(vec![v])],
                text: "NaN".into(),
            };
            for text in [super::to_string(&x).unwrap(), super::to_string_pretty(&x).unwrap()] {
                // Only the two Nones are null.
                assert_eq!(text.matches("null").count(), 2, "{text}");
                let y: All = super::from_str(&text).unwrap();
                assert!(same(y.a, v) && same(y.opt.unwrap(), v) && y.none.is_none(), "{v}: {text}");
                assert!(same(y.b as f64, v as f32 as f64));
                assert!(same(y.list[0], v) && y.list[1] == 1.5 && same(y.list[2], v));
                assert!(same(y.pair[0], v) && same(y.pair[1], -v) && same(y.tuple.1, v) && y.tuple.0 == 7);
                assert!(same(y.map["k"], v));
                match &y.shapes[..] {
                    [Shape::Unit, Shape::New(a), Shape::Tuple(b, c), Shape::Named { x }] => {
                        assert!(same(*a, v) && same(*b, v) && *c == 2.0 && same(*x, v))
                    }
                    other => panic!("{other:?}"),
                }
                assert!(y.nested[0].is_none() && same(y.nested[1].as_ref().unwrap()[0], v));
                assert_eq!(y.text, "NaN");
                let z: All = super::from_slice(text.as_bytes()).unwrap();
                assert!(same(z.a, v));
                let r: All = super::from_reader(text.as_bytes()).unwrap();
                assert!(same(r.a, v));
            }
        }
    }

    /// What earlier versions wrote for an undefined figure (`null`) reads as NaN where a float
    /// is expected, and as None where an optional one is; other words are refused by name.
    #[test]
    fn null_reads_as_nan_and_other_words_are_refused() {
        #[derive(Debug, Deserialize)]
        struct T {
            a: f64,
            b: Option<f64>,
            c: Vec<f64>,
        }
        let t: T = super::from_str(r#"{"a": null, "b": null, "c": [null, 1]}"#).unwrap();
        assert!(t.a.is_nan() && t.b.is_none() && t.c[0].is_nan() && t.c[1] == 1.0);
        let e = super::from_str::<T>(r#"{"a": "many", "b": 1, "c": []}"#).unwrap_err().to_string();
        assert!(e.contains("\"many\"") && e.contains("\"NaN\""), "{e}");
        assert!(super::from_str::<T>(r#"{"a": 1, "b": 1, "c": []} x"#).is_err(), "trailing input");
        let v = super::to_value(&[f64::NAN, 1.0]).unwrap();
        assert_eq!(v, serde_json::json!(["NaN", 1.0]));
    }
}
