//! The figures of I/O-server ranks in the store: one row per server, repetition and phase
//! (`server_results`), written with the run and read back with its phases.

use rusqlite::{Connection, params};

use super::Store;
use crate::error::Result;
use crate::results::ServerResult;

impl Store {
    /// Writes the servers of one repetition of one phase, within the run's transaction.
    pub(super) fn insert_servers(
        &self,
        tx: &Connection,
        run_id: &str,
        phase: i64,
        servers: &[ServerResult],
    ) -> Result<()> {
        for s in servers {
            tx.execute(
                "INSERT INTO server_results (run_id, phase, server, rank, host, store, files, requests,
                     write_bytes, read_bytes, time_ns, busy_ns, disk_ns, net_ns, resident_fraction,
                     device_read_bytes, device_write_bytes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                params![
                    run_id,
                    phase,
                    s.server,
                    s.rank,
                    s.host,
                    s.store,
                    s.files,
                    s.requests as i64,
                    s.write_bytes as i64,
                    s.read_bytes as i64,
                    s.time_ns as i64,
                    s.busy_ns as i64,
                    s.disk_ns as i64,
                    s.net_ns as i64,
                    s.resident_fraction.map(super::real::Real),
                    s.device_read_bytes as i64,
                    s.device_write_bytes as i64
                ],
            )
            .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// The servers of one repetition of one phase, by server.
    pub(super) fn load_servers(&self, run_id: &str, phase: i64) -> Result<Vec<ServerResult>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT server, rank, host, store, files, requests, write_bytes, read_bytes, time_ns, busy_ns,
                        disk_ns, net_ns, resident_fraction, device_read_bytes, device_write_bytes
                 FROM server_results WHERE run_id = ?1 AND phase = ?2 ORDER BY server",
            )
            .map_err(|e| self.err(e))?;
        let n = |v: i64| v as u64;
        let rows = stmt
            .query_map(params![run_id, phase], |r| {
                Ok(ServerResult {
                    server: r.get(0)?,
                    rank: r.get(1)?,
                    host: r.get(2)?,
                    store: r.get(3)?,
                    files: r.get(4)?,
                    requests: n(r.get(5)?),
                    write_bytes: n(r.get(6)?),
                    read_bytes: n(r.get(7)?),
                    time_ns: n(r.get(8)?),
                    busy_ns: n(r.get(9)?),
                    disk_ns: n(r.get(10)?),
                    net_ns: n(r.get(11)?),
                    resident_fraction: r.get::<_, Option<super::real::Real>>(12)?.map(|x| x.0),
                    device_read_bytes: n(r.get(13)?),
                    device_write_bytes: n(r.get(14)?),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| self.err(e))
    }
}
