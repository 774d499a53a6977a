//! The messages between the clients of I/O-server ranks (engine `servers`) and the servers
//! (`crate::launch::io_server_loop`): a request's header, the tags each kind of message goes
//! on, and the status every request is answered with. Plain bytes, little-endian.

/// Client to server: a request's header ([`Header`]).
pub const TAG_REQ: i32 = 301;
/// Client to server: a write's bytes, right after its header.
pub const TAG_WDATA: i32 = 302;
/// Client to server: one block of a blast over MPI.
pub const TAG_BLAST: i32 = 303;
/// Server to client: where to connect for a blast over TCP (`ok ADDRESS:PORT`), or why
/// not (`error TEXT`).
pub const TAG_ADDR: i32 = 304;
/// Server to client: the status of the request in slot i, on tag `TAG_STATUS + i`.
pub const TAG_STATUS: i32 = 1000;
/// Server to client: a read's bytes, for the request in slot i, on `TAG_RDATA + i`.
pub const TAG_RDATA: i32 = 6000;
/// Slots of one client: requests it has in flight at once (a block's pieces).
pub const MAX_SLOTS: usize = 4096;
pub const HEADER_BYTES: usize = 32;
/// A status: code (i32, 0 = done), 4 bytes of padding, count (u64), then the error text.
pub const STATUS_BYTES: usize = 512;
/// The most bytes of a TCP address message.
pub const ADDR_BYTES: usize = 256;

/// What a request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Write = 1,
    Read = 2,
    /// Commit a file: `arg` 0 fdatasync, 1 fsync.
    Commit = 3,
    /// The client is done with this phase (no reply).
    Done = 4,
    /// A blast's end: `len` is what the client sent; the reply counts what arrived.
    BlastEnd = 5,
}

/// A request: `len` bytes at `offset` of global file `gid`, answered on `slot`'s tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub gid: u32,
    pub slot: u32,
    pub arg: u32,
    pub offset: u64,
    pub len: u64,
}

impl Header {
    pub fn encode(&self, out: &mut [u8; HEADER_BYTES]) {
        out[0..4].copy_from_slice(&(self.kind as u32).to_le_bytes());
        out[4..8].copy_from_slice(&self.gid.to_le_bytes());
        out[8..12].copy_from_slice(&self.slot.to_le_bytes());
        out[12..16].copy_from_slice(&self.arg.to_le_bytes());
        out[16..24].copy_from_slice(&self.offset.to_le_bytes());
        out[24..32].copy_from_slice(&self.len.to_le_bytes());
    }

    pub fn decode(b: &[u8]) -> Option<Header> {
        let u32_at = |i: usize| Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?));
        let u64_at = |i: usize| Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?));
        let kind = match u32_at(0)? {
            1 => Kind::Write,
            2 => Kind::Read,
            3 => Kind::Commit,
            4 => Kind::Done,
            5 => Kind::BlastEnd,
            _ => return None,
        };
        Some(Header {
            kind,
            gid: u32_at(4)?,
            slot: u32_at(8)?,
            arg: u32_at(12)?,
            offset: u64_at(16)?,
            len: u64_at(24)?,
        })
    }
}

/// Writes a status into `out`; returns its length.
pub fn encode_status(out: &mut [u8; STATUS_BYTES], code: i32, count: u64, text: &str) -> usize {
    out[0..4].copy_from_slice(&code.to_le_bytes());
    out[4..8].fill(0);
    out[8..16].copy_from_slice(&count.to_le_bytes());
    let mut n = text.len().min(STATUS_BYTES - 16);
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    out[16..16 + n].copy_from_slice(&text.as_bytes()[..n]);
    16 + n
}

/// A status's code, count and text.
pub fn decode_status(b: &[u8]) -> (i32, u64, String) {
    if b.len() < 16 {
        return (-1, 0, format!("a status of {} bytes", b.len()));
    }
    let code = i32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
    let count = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
    (code, count, String::from_utf8_lossy(&b[16..]).into_owned())
}

/// Bytes of the token a client of a blast over TCP sends first on its connection: 128 random
/// bits, new for each listener, handed to the client over MPI with the address.
pub const TOKEN_BYTES: usize = 16;

/// A fresh token from the kernel's random bytes.
pub fn new_token() -> [u8; TOKEN_BYTES] {
    let mut t = [0u8; TOKEN_BYTES];
    t[..8].copy_from_slice(&crate::env::sys::random_u64().to_le_bytes());
    t[8..].copy_from_slice(&crate::env::sys::random_u64().to_le_bytes());
    t
}

/// The server's message to a client of a blast over TCP: `ok ADDRESS:PORT TOKEN` (hex).
pub fn encode_addr(addr: std::net::SocketAddr, token: &[u8; TOKEN_BYTES]) -> String {
    let hex: String = token.iter().map(|b| format!("{b:02x}")).collect();
    format!("ok {addr} {hex}")
}

/// The address and token of an `ok` message, or what is wrong with it.
pub fn decode_addr(text: &str) -> std::result::Result<(std::net::SocketAddr, [u8; TOKEN_BYTES]), String> {
    let bad = || format!("a blast address message `{}`", crate::text::one_line(text));
    let (addr, hex) = text.strip_prefix("ok ").and_then(|t| t.split_once(' ')).ok_or_else(bad)?;
    let addr = addr.parse().map_err(|e| format!("{}: {e}", bad()))?;
    let mut token = [0u8; TOKEN_BYTES];
    if hex.len() != 2 * TOKEN_BYTES {
        return Err(bad());
    }
    for (i, t) in token.iter_mut().enumerate() {
        *t = u8::from_str_radix(hex.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16).map_err(|_| bad())?;
    }
    Ok((addr, token))
}

/// The client's side of a blast over TCP, once connected: its token, before any byte counts.
pub fn present(s: &mut std::net::TcpStream, token: &[u8; TOKEN_BYTES]) -> std::io::Result<()> {
    std::io::Write::write_all(s, token)
}

/// How long the server waits for a new connection's token.
pub const TOKEN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The server's side: the next connection on `l` whose first bytes are `token` (waiting for
/// one when `blocking`, else only one already queued), in blocking mode. Any other connection,
/// a stranger's (another local process, a port scanner), is dropped before a byte of it counts,
/// and `stranger` is told its peer address and why; `None` when no connection is queued (or
/// accepting fails).
pub fn admit(
    l: &std::net::TcpListener,
    token: &[u8; TOKEN_BYTES],
    blocking: bool,
    mut stranger: impl FnMut(String),
) -> Option<std::net::TcpStream> {
    use std::io::Read;
    l.set_nonblocking(!blocking).ok()?;
    loop {
        let (mut s, peer) = l.accept().ok()?;
        let mut got = [0u8; TOKEN_BYTES];
        let read = s
            .set_nonblocking(false)
            .and_then(|()| s.set_read_timeout(Some(TOKEN_WAIT)))
            .and_then(|()| s.read_exact(&mut got));
        match read {
            Ok(()) if got == *token => {
                let _ = s.set_read_timeout(None);
                return Some(s);
            }
            Ok(()) => stranger(format!("{peer}: its first bytes are not the client's token")),
            Err(e) => stranger(format!("{peer}: no token ({e})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A local process that connects to a blast listener first is dropped and named by its
    /// address, whether it sends the wrong bytes or none; the client, which sends its token,
    /// is the connection admitted, and its bytes after the token are the first that count.
    #[test]
    fn only_the_client_with_the_token_is_admitted() {
        use std::io::{Read, Write};
        use std::net::{TcpListener, TcpStream};
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = l.local_addr().unwrap();
        let token = new_token();
        assert_ne!(token, new_token());
        let msg = encode_addr(addr, &token);
        assert_eq!(decode_addr(&msg), Ok((addr, token)));
        assert!(decode_addr("ok 127.0.0.1:1 00").is_err());
        assert!(decode_addr(&format!("ok {addr}")).is_err());
        // Nothing queued: a non-blocking admission admits no one.
        assert!(admit(&l, &token, false, |m| panic!("{m}")).is_none());
        let mut liar = TcpStream::connect(addr).unwrap();
        liar.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        let mute = TcpStream::connect(addr).unwrap();
        drop(mute);
        let (liar_at, mut named) = (liar.local_addr().unwrap(), vec![]);
        let client = std::thread::spawn(move || {
            let (addr, token) = decode_addr(&msg).unwrap();
            let mut s = TcpStream::connect(addr).unwrap();
            present(&mut s, &token).unwrap();
            s.write_all(b"block").unwrap();
            s.local_addr().unwrap()
        });
        let mut s = admit(&l, &token, true, |m| named.push(m)).expect("the client is admitted");
        let client_at = client.join().unwrap();
        assert_eq!(s.peer_addr().unwrap(), client_at);
        let mut first = [0u8; 5];
        s.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"block");
        assert_eq!(named.len(), 2, "{named:?}");
        assert!(
            named[0].starts_with(&format!("{liar_at}: its first bytes are not the client's token")),
            "{named:?}"
        );
        assert!(named[1].contains(": no token ("), "{named:?}");
        // The stranger's connection is closed: it reads the end.
        let mut rest = vec![];
        liar.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        assert!(liar.read_to_end(&mut rest).is_ok_and(|n| n == 0) || rest.is_empty());
    }

    #[test]
    fn headers_and_statuses_round_trip() {
        let h = Header { kind: Kind::Read, gid: 7, slot: 3, arg: 1, offset: 1 << 40, len: 16384 };
        let mut b = [0u8; HEADER_BYTES];
        h.encode(&mut b);
        assert_eq!(Header::decode(&b), Some(h));
        assert_eq!(Header::decode(&[9u8; HEADER_BYTES]), None);
        let mut s = [0u8; STATUS_BYTES];
        let n = encode_status(&mut s, 28, 5, "server 1 (rank 3 on h2): No space left on device");
        assert_eq!(
            decode_status(&s[..n]),
            (28, 5, "server 1 (rank 3 on h2): No space left on device".to_string())
        );
        let long = "é".repeat(400);
        let n = encode_status(&mut s, 1, 0, &long);
        assert!(n <= STATUS_BYTES && std::str::from_utf8(&s[16..n]).is_ok());
    }
}
