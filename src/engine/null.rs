//! `null`: moves no data and opens no files. For CLI and output-format tests only; its
//! results say nothing about storage.

use std::io;

use super::{Caps, Engine, EngineDef, Setup};
use crate::error::Result;
use crate::plan::Op;
use crate::spec::SyncCall;

pub static DEF: EngineDef = EngineDef {
    name: "null",
    about: "no I/O at all (for testing iolab itself; results mean nothing)",
    caps: Caps { direct: true, real_io: false, sync_calls: &[SyncCall::Fsync, SyncCall::Fdatasync] },
    run: crate::worker::run_worker::<Null>,
};

pub struct Null {
    buf: Vec<u8>,
}

impl Engine for Null {
    fn open(setup: &Setup<'_>) -> Result<Self> {
        Ok(Null { buf: vec![0; setup.bs] })
    }
    fn buf(&mut self) -> &mut [u8] {
        &mut self.buf
    }
    fn io(&mut self, op: Op, _write: bool) -> io::Result<u64> {
        Ok(op.len)
    }
    fn sync(&mut self, _file: u32, _call: SyncCall) -> io::Result<()> {
        Ok(())
    }
    fn close(self) -> io::Result<()> {
        Ok(())
    }
    fn call_name(_write: bool) -> &'static str {
        "null"
    }
}
