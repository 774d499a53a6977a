//! A rank's reply to a phase order: its workers' samples (or its failure) and a server rank's
//! figures, in a compact binary encoding (postcard: integers as varints, no field names).

use serde::{Deserialize, Serialize};

use crate::launch::child::SampleWire;
use crate::worker::ServerSample;

/// A rank's answer to a phase order.
#[derive(Serialize, Deserialize)]
pub(super) struct Reply {
    pub rank: u32,
    pub result: std::result::Result<Vec<SampleWire>, String>,
    /// A server rank's figures.
    pub servers: Vec<ServerSample>,
}

impl Reply {
    /// The reply's bytes; a reply that cannot be encoded becomes its rank's failure.
    #[cfg(test)]
    pub fn encode(&self) -> Vec<u8> {
        self.encode_or_failure().0
    }

    /// The reply's bytes and whether they are the reply (else its rank's failure to encode it).
    pub fn encode_or_failure(&self) -> (Vec<u8>, bool) {
        match postcard::to_allocvec(self) {
            Ok(b) => (b, true),
            Err(e) => {
                let r = Reply {
                    rank: self.rank,
                    result: Err(format!("its results could not be sent: {e}")),
                    servers: vec![],
                };
                (postcard::to_allocvec(&r).unwrap_or_default(), false)
            }
        }
    }

    pub fn decode(bytes: &[u8]) -> std::result::Result<Reply, String> {
        postcard::from_bytes(bytes).map_err(|e| e.to_string())
    }
}
