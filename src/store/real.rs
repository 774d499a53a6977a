//! Figures in REAL columns. SQLite stores a NaN bound as a float as NULL, which a NOT NULL
//! column refuses (the run would not be stored) and no float reads back; so a NaN is stored
//! as the text `NaN`, the infinities as SQLite's own infinite REALs, and a NULL (or `NaN`)
//! read where a figure is expected is NaN: an undefined figure, never an unreadable row.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// A figure bound to or read from a REAL column.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Real(pub f64);

impl ToSql for Real {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(if self.0.is_nan() { ToSqlOutput::from("NaN") } else { ToSqlOutput::from(self.0) })
    }
}

impl FromSql for Real {
    fn column_result(v: ValueRef<'_>) -> FromSqlResult<Real> {
        match v {
            ValueRef::Real(x) => Ok(Real(x)),
            ValueRef::Integer(i) => Ok(Real(i as f64)),
            ValueRef::Null => Ok(Real(f64::NAN)),
            ValueRef::Text(t) => match t {
                b"NaN" => Ok(Real(f64::NAN)),
                b"inf" | b"Inf" => Ok(Real(f64::INFINITY)),
                b"-inf" | b"-Inf" => Ok(Real(f64::NEG_INFINITY)),
                _ => Err(FromSqlError::InvalidType),
            },
            ValueRef::Blob(_) => Err(FromSqlError::InvalidType),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Real;

    /// Every figure survives a NOT NULL REAL column: NaN, the infinities, zero of both signs,
    /// the extremes; a NULL left by an earlier version reads as NaN; an optional figure keeps
    /// None apart from NaN.
    #[test]
    fn figures_survive_a_real_column() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (i INTEGER, x REAL NOT NULL, y REAL)").unwrap();
        let vals =
            [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, f64::MAX, f64::MIN, f64::MIN_POSITIVE];
        for (i, &v) in vals.iter().enumerate() {
            c.execute(
                "INSERT INTO t VALUES (?1, ?2, ?3)",
                rusqlite::params![i as i64, Real(v), Some(Real(v))],
            )
            .unwrap();
        }
        c.execute("INSERT INTO t VALUES (99, 1.5, NULL)", []).unwrap();
        for (i, &v) in vals.iter().enumerate() {
            let (x, y): (Real, Option<Real>) = c
                .query_row("SELECT x, y FROM t WHERE i = ?1", [i as i64], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            let y = y.unwrap().0;
            assert!(x.0 == v || (v.is_nan() && x.0.is_nan()), "{v} read as {}", x.0);
            assert!(y == v || (v.is_nan() && y.is_nan()), "{v} read as {y}");
        }
        let y: Option<Real> = c.query_row("SELECT y FROM t WHERE i = 99", [], |r| r.get(0)).unwrap();
        assert!(y.is_none());
        let x: Real = c.query_row("SELECT y FROM t WHERE i = 99", [], |r| r.get(0)).unwrap();
        assert!(x.0.is_nan(), "a NULL where a figure is expected reads as NaN");
    }
}
