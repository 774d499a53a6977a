//! The order in which a worker visits its blocks, as a spec says it: in sequence, in reverse,
//! a seeded permutation (every block once), or drawn per op with repeats from one of fio's
//! `random_distribution`s (uniform, zipf, pareto, normal), each with its parameter.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A distribution's parameter: a finite number, compared by its bits so that an order is `Eq`.
#[derive(Debug, Clone, Copy)]
pub struct Param(pub f64);

impl PartialEq for Param {
    fn eq(&self, other: &Param) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Param {}

/// The order in which a worker visits its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Seq,
    Reverse,
    /// A seeded permutation: every block once.
    Random,
    /// Drawn per op, every block equally likely, with repeats (fio's `norandommap`).
    Uniform,
    /// Zipf with this theta (fio's `zipf:THETA`; not 1).
    Zipf(Param),
    /// Pareto with this power h, 0 < h < 1 (fio's `pareto:H`).
    Pareto(Param),
    /// fio's `normal:DEV`: a bell around the middle of the blocks, widened by DEV percent of
    /// them (0 <= DEV < 100).
    Normal(Param),
}

/// fio's default theta of `zipf` and power of `pareto`, when none is given.
pub const DEFAULT_ZIPF: f64 = 1.1;
pub const DEFAULT_PARETO: f64 = 0.2;

impl Order {
    /// The order `s` names (`zipf:1.2`, `seq`, ...), or why it is none.
    pub fn parse_checked(s: &str) -> std::result::Result<Order, String> {
        let (kind, value) = match s.split_once(':') {
            Some((k, v)) => (k, Some(v)),
            None => (s, None),
        };
        let num = |default: f64| -> std::result::Result<f64, String> {
            match value {
                None => Ok(default),
                Some(v) => match v.trim().parse::<f64>() {
                    Ok(x) if x.is_finite() => Ok(x),
                    _ => Err(format!("`{v}` is not a number")),
                },
            }
        };
        let plain = |o: Order| match value {
            None => Ok(o),
            Some(_) => Err(format!("{kind} takes no parameter")),
        };
        match kind {
            "seq" | "sequential" => plain(Order::Seq),
            "reverse" | "rev" => plain(Order::Reverse),
            "random" | "rand" => plain(Order::Random),
            "uniform" => plain(Order::Uniform),
            "zipf" => match num(DEFAULT_ZIPF)? {
                t if t <= 0.0 || t == 1.0 => {
                    Err(format!("zipf's theta must be above 0 and not 1 (fio's rule), not {t}"))
                }
                t => Ok(Order::Zipf(Param(t))),
            },
            "pareto" => match num(DEFAULT_PARETO)? {
                h if h <= 0.0 || h >= 1.0 => {
                    Err(format!("pareto's power must be above 0 and below 1, not {h}"))
                }
                h => Ok(Order::Pareto(Param(h))),
            },
            "normal" | "gauss" => match num(0.0)? {
                d if !(0.0..100.0).contains(&d) => {
                    Err(format!("normal's deviation must be at least 0 and below 100 (percent), not {d}"))
                }
                d => Ok(Order::Normal(Param(d))),
            },
            _ => Err(format!("unknown order `{kind}` ({})", Order::CHOICES)),
        }
    }

    /// The order `s` names, if it is one.
    pub fn parse(s: &str) -> Option<Order> {
        Order::parse_checked(s).ok()
    }

    /// The orders' words, for messages.
    pub const CHOICES: &'static str = "seq, reverse, random, uniform, zipf:THETA, pareto:H, normal:DEV";

    /// Whether an order of this kind takes a parameter after a colon (`zipf:1.2`).
    pub fn takes_param(kind: &str) -> bool {
        matches!(kind, "zipf" | "pareto" | "normal" | "gauss")
    }

    /// Its kind's word: `seq`, `reverse`, `random`, `uniform`, `zipf`, `pareto`, `normal`.
    pub fn name(self) -> &'static str {
        match self {
            Order::Seq => "seq",
            Order::Reverse => "reverse",
            Order::Random => "random",
            Order::Uniform => "uniform",
            Order::Zipf(_) => "zipf",
            Order::Pareto(_) => "pareto",
            Order::Normal(_) => "normal",
        }
    }

    /// The order as a spec writes it: its word, and its parameter (`zipf:1.2`).
    pub fn label(self) -> String {
        match self {
            Order::Zipf(Param(p)) | Order::Pareto(Param(p)) | Order::Normal(Param(p)) => {
                format!("{}:{p}", self.name())
            }
            _ => self.name().to_string(),
        }
    }

    /// Drawn per op, so a block may come again (and some never): every order but seq,
    /// reverse and the permutation.
    pub fn repeats(self) -> bool {
        !matches!(self, Order::Seq | Order::Reverse | Order::Random)
    }
}

impl Serialize for Order {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl<'de> Deserialize<'de> for Order {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Order::parse_checked(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_parse_with_fio_defaults_and_ranges() {
        assert_eq!(Order::parse("zipf:1.2"), Some(Order::Zipf(Param(1.2))));
        assert_eq!(Order::parse("zipf"), Some(Order::Zipf(Param(1.1))));
        assert_eq!(Order::parse("pareto"), Some(Order::Pareto(Param(0.2))));
        assert_eq!(Order::parse("gauss:5"), Some(Order::Normal(Param(5.0))));
        assert_eq!(Order::parse("uniform"), Some(Order::Uniform));
        for bad in
            ["zipf:1", "zipf:0", "pareto:1", "pareto:0", "normal:100", "normal:-1", "zipf:x", "seq:2", "zig"]
        {
            assert!(Order::parse_checked(bad).is_err(), "{bad}");
        }
        for o in ["seq", "reverse", "random", "uniform", "zipf:1.2", "pareto:0.3", "normal:10"] {
            let parsed = Order::parse(o).unwrap();
            assert_eq!(parsed.label(), o);
            let json = serde_json::to_string(&parsed).unwrap();
            assert_eq!(serde_json::from_str::<Order>(&json).unwrap(), parsed);
        }
        assert!(Order::Zipf(Param(1.2)).repeats() && !Order::Random.repeats());
    }
}
