//! `null`: moves no data and opens no files. For CLI and output-format tests only; its
//! results say nothing about storage.

use std::io;

use super::{CallCounts, CallResult, Caps, Engine, EngineDef, Setup};
use crate::error::Result;
use crate::plan::Op;
use crate::spec::SyncCall;

pub static DEF: EngineDef = EngineDef {
    name: "null",
    about: "no I/O at all (for testing iolab itself; results mean nothing)",
    caps: Caps {
        direct: true,
        open_sync: true,
        real_io: false,
        sync_calls: &[SyncCall::Fdatasync, SyncCall::Fsync],
        max_iodepth: 1,
        strided: Some("ignores it"),
        strided_to_kernel: false,
        window: false,
        probe: super::always_available,
        main_thread: false,
        parallel_pieces: false,
    },
};

pub struct Null {
    buf: crate::env::sys::AlignedBuf,
}

impl Engine for Null {
    fn open(setup: &Setup<'_>) -> Result<Self> {
        Ok(Null { buf: super::buffer(setup, setup.mem_bytes())? })
    }
    fn buf(&mut self) -> &mut [u8] {
        &mut self.buf
    }
    fn io(&mut self, op: Op, _write: bool) -> CallResult<u64> {
        Ok(op.len)
    }
    fn sync(&mut self, _file: u32, _call: SyncCall) -> CallResult<()> {
        Ok(())
    }
    fn close(self) -> io::Result<CallCounts> {
        Ok(CallCounts::default())
    }
    fn call_name(_write: bool) -> &'static str {
        "null"
    }
}
