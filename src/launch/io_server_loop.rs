//! The request loop of an I/O-server rank: it answers its clients' requests in the order they
//! arrive, one at a time (the server is one rank, calling MPI from its main thread), until
//! every client has said it is done. A write's bytes are received and written with pwrite (the
//! memory store drops them), a read is read with pread (the memory store makes the bytes the
//! file would hold: the same fill and stamps), a commit is fsync or fdatasync, and a blast's
//! blocks (MPI messages, or bytes on a TCP connection) are counted and dropped. Every request
//! gets one status; a failure's status carries the error, naming the server, its host and the
//! file. It records what it did: requests, bytes each way, time busy and, within it, time in
//! disk calls and time moving bytes to and from clients.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::engine::servers::{Header, Kind};
use crate::engine::wire::*;
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::launch::mpi_hosts::local_identity;
use crate::launch::mpi_order::PhaseOrder;
use crate::launch::world::{WorldInfo, world};
use crate::plan::{Op, RunPlan};
use crate::spec::OpKind;
use crate::worker::ServerSample;
use crate::worker::data::DataPath;

/// One file a server holds in a phase.
struct Held {
    /// Open (disk store), or `None` (memory store: no file anywhere).
    file: Option<File>,
    /// The bytes the file holds, for the memory store's reads.
    data: DataPath,
}

/// The files a server holds in a phase, ready to serve.
pub(super) struct Store {
    held: Vec<Held>,
    /// Global file id -> index into `held`.
    by_gid: Vec<Option<usize>>,
    resident: Option<f64>,
}

impl Store {
    /// Server files `gids` at `paths`: on disk, each checked to be the file its host's first
    /// server rank made, its cache state set as the phase asks (the resident fraction measured
    /// with mincore), and opened; in memory, nothing but the data they would hold.
    pub(super) fn open(
        p: &PhaseOrder,
        plan: &RunPlan,
        gids: &[usize],
        paths: &[PathBuf],
        disk: bool,
    ) -> Result<Store> {
        let spec = &p.spec;
        let phase = &plan.phases[p.phase];
        let mut by_gid = vec![None; plan.files.len()];
        let mut held = Vec::with_capacity(gids.len());
        let mut resident = None;
        let mut ids = vec![];
        if disk {
            for path in paths {
                ids.push(local_identity(path)?);
            }
            resident = Some(crate::target::cache::prepare(phase.cache, paths, &ids, spec.drop_caches)?);
        }
        for (k, (&g, path)) in gids.iter().zip(paths).enumerate() {
            let file = if disk {
                Some(crate::target::owned::open(path, ids[k], phase.op.is_write(), 0)?)
            } else {
                None
            };
            by_gid[g] = Some(k);
            held.push(Held { file, data: DataPath::with(spec, &[g as u32], p.tag) });
        }
        Ok(Store { held, by_gid, resident })
    }
}

/// A request's outcome for its status: the bytes moved, or an errno (-1: none) and the text.
type Answer = std::result::Result<u64, (i32, String)>;

/// A client's blast over TCP, as the server sees it.
struct TcpBlast {
    client: i32,
    listener: Option<TcpListener>,
    stream: Option<TcpStream>,
    /// What the client sends first (given to it over MPI): a connection without it is a
    /// stranger's, dropped.
    token: [u8; TOKEN_BYTES],
}

/// One server's phase: its store (or why it has none), its clients, and what it did.
pub(super) struct Serving<'a> {
    p: &'a PhaseOrder,
    comm: SimpleCommunicator,
    who: String,
    store: std::result::Result<Store, String>,
    buf: Vec<u8>,
    /// Bytes of a blast received from each rank.
    blast_got: Vec<u64>,
    tcp: Vec<TcpBlast>,
    clients: u32,
    done: u32,
    figures: ServerSample,
}

impl<'a> Serving<'a> {
    /// The block a server receives into and sends from, every page written: made before the
    /// phase's first barrier, so no client's open waits for it.
    pub(super) fn block(p: &PhaseOrder) -> Vec<u8> {
        let mut buf = vec![0u8; p.spec.bs_bytes as usize];
        crate::plan::fill::fill(&mut buf, p.spec.seed);
        buf
    }

    pub(super) fn new(
        p: &'a PhaseOrder,
        j: u32,
        w: &WorldInfo,
        store: Result<Store>,
        buf: Vec<u8>,
    ) -> Serving<'a> {
        let who = who(j, w);
        let store = store.map_err(|e| format!("{who}: {e}"));
        let figures = ServerSample {
            server: j,
            rank: w.rank,
            host: w.hosts[w.rank as usize].to_string(),
            store: p.spec.servers.as_ref().map_or("disk", |s| s.store.name()).to_string(),
            files: store.as_ref().map_or(0, |s| s.held.iter().filter(|h| h.file.is_some()).count() as u32),
            resident_fraction: store.as_ref().ok().and_then(|s| s.resident),
            ..Default::default()
        };
        Serving {
            p,
            comm: SimpleCommunicator::world(),
            who,
            store,
            buf,
            blast_got: vec![0; w.size as usize],
            tcp: vec![],
            clients: p.spec.workers,
            done: 0,
            figures,
        }
    }

    /// A blast over TCP: a listener for each of this server's clients, on the address that
    /// client reaches this host by, sent to it over MPI (or why there is none).
    pub(super) fn send_blast_addresses(&mut self) {
        let spec = &self.p.spec;
        let Some(servers) = spec.servers.as_ref() else { return };
        let blast = spec.phases.get(self.p.phase).is_some_and(|ph| ph.op == OpKind::Blast);
        if !blast || !servers.blast.is_tcp() {
            return;
        }
        let w = world().expect("the world is known");
        let phase_workers = spec.phase_workers(&spec.phases[self.p.phase]);
        for c in 0..phase_workers {
            if crate::plan::target_of(spec, c) != self.figures.server {
                continue;
            }
            let msg = match listen_for(w, c) {
                Ok((l, addr)) => {
                    let token = new_token();
                    self.tcp.push(TcpBlast { client: c as i32, listener: Some(l), stream: None, token });
                    encode_addr(addr, &token)
                }
                Err(e) => format!("error {}: blast over TCP: {e}", self.who),
            };
            let mut b = msg.into_bytes();
            b.truncate(ADDR_BYTES);
            self.comm.process_at_rank(c as i32).send_with_tag(&b[..], TAG_ADDR);
        }
    }

    /// Answers requests until every client is done; the figures, or the store's failure.
    pub(super) fn run(mut self) -> Result<ServerSample> {
        let t0 = now_ns();
        while self.done < self.clients {
            match self.comm.any_process().immediate_probe() {
                Some(st) => {
                    let t = now_ns();
                    let counted =
                        self.handle(st.source_rank(), st.tag(), st.count(u8::equivalent_datatype()) as usize);
                    if counted {
                        self.figures.busy_ns += now_ns() - t;
                    }
                }
                None => {
                    if !self.poll_tcp() {
                        std::thread::yield_now();
                    }
                }
            }
        }
        self.figures.time_ns = now_ns() - t0;
        // Nothing listens or stays connected beyond the phase.
        self.tcp.clear();
        match self.store {
            Ok(_) => Ok(self.figures),
            Err(e) => Err(Error::Run(e)),
        }
    }

    /// One message from `src`; whether it was work (a request or a blast's bytes).
    fn handle(&mut self, src: i32, tag: i32, count: usize) -> bool {
        let from = self.comm.process_at_rank(src);
        match tag {
            TAG_BLAST if count <= self.buf.len() => {
                let t = now_ns();
                from.receive_into_with_tag(&mut self.buf[..count], TAG_BLAST);
                self.figures.net_ns += now_ns() - t;
                self.blast_got[src as usize] += count as u64;
                self.figures.write_bytes += count as u64;
                true
            }
            TAG_REQ => {
                let mut b = [0u8; HEADER_BYTES];
                from.receive_into_with_tag(&mut b[..], TAG_REQ);
                match Header::decode(&b) {
                    Some(h) if h.kind == Kind::Done => {
                        self.done += 1;
                        self.tcp.retain(|t| t.client != src);
                        false
                    }
                    Some(h) => {
                        self.figures.requests += 1;
                        self.request(src, h);
                        true
                    }
                    None => {
                        self.store = Err(format!("{}: a request from rank {src} that is not one", self.who));
                        false
                    }
                }
            }
            other => {
                // Not a message of the protocol: taken off the queue, and the phase fails.
                let _ = from.receive_vec_with_tag::<u8>(other);
                self.store =
                    Err(format!("{}: an unexpected message (tag {other}) from rank {src}", self.who));
                false
            }
        }
    }

    fn request(&mut self, src: i32, h: Header) {
        let len = h.len as usize;
        match h.kind {
            Kind::Write => {
                let from = self.comm.process_at_rank(src);
                let t = now_ns();
                if len <= self.buf.len() {
                    from.receive_into_with_tag(&mut self.buf[..len], TAG_WDATA);
                } else {
                    let _ = from.receive_vec_with_tag::<u8>(TAG_WDATA);
                }
                self.figures.net_ns += now_ns() - t;
                let a = self.write(h);
                if a.is_ok() {
                    self.figures.write_bytes += h.len;
                }
                self.reply(src, h.slot, a);
            }
            Kind::Read => {
                let a = self.read(h);
                let n = if a.is_ok() { len } else { 0 };
                self.reply(src, h.slot, a);
                let t = now_ns();
                self.comm.process_at_rank(src).send_with_tag(&self.buf[..n], TAG_RDATA + h.slot as i32);
                self.figures.net_ns += now_ns() - t;
                self.figures.read_bytes += n as u64;
            }
            Kind::Commit => {
                let a = self.commit(h);
                self.reply(src, h.slot, a);
            }
            Kind::BlastEnd => {
                let a = self.blast_end(src, h.len);
                self.reply(src, h.slot, a);
            }
            Kind::Done => {}
        }
    }

    fn write(&mut self, h: Header) -> Answer {
        let len = h.len as usize;
        if len > self.buf.len() {
            return Err((-1, format!("{}: a write of {len} bytes, more than a block", self.who)));
        }
        let t = now_ns();
        let r = held(&mut self.store, &self.who, h).and_then(|f| match &f.file {
            None => Ok(h.len),
            Some(file) => file
                .write_all_at(&self.buf[..len], h.offset)
                .map(|()| h.len)
                .map_err(|e| io_answer(&self.who, "pwrite", e)),
        });
        self.figures.disk_ns += now_ns() - t;
        r
    }

    fn read(&mut self, h: Header) -> Answer {
        let len = h.len as usize;
        if len > self.buf.len() {
            return Err((-1, format!("{}: a read of {len} bytes, more than a block", self.who)));
        }
        let t = now_ns();
        let buf = &mut self.buf[..len];
        let r = held(&mut self.store, &self.who, h).and_then(|f| match &f.file {
            None => {
                f.data.before_write(buf, Op { file: 0, offset: h.offset, len: h.len });
                Ok(h.len)
            }
            Some(file) => file
                .read_exact_at(buf, h.offset)
                .map(|()| h.len)
                .map_err(|e| io_answer(&self.who, "pread", e)),
        });
        self.figures.disk_ns += now_ns() - t;
        r
    }

    fn commit(&mut self, h: Header) -> Answer {
        let t = now_ns();
        let r = held(&mut self.store, &self.who, h).and_then(|f| match &f.file {
            None => Ok(0),
            Some(file) => {
                let (call, r) =
                    if h.arg == 1 { ("fsync", file.sync_all()) } else { ("fdatasync", file.sync_data()) };
                r.map(|()| 0).map_err(|e| io_answer(&self.who, call, e))
            }
        });
        self.figures.disk_ns += now_ns() - t;
        r
    }

    /// A blast's end: the rest of what client `src` sent (`total` bytes in all) received; the
    /// count.
    fn blast_end(&mut self, src: i32, total: u64) -> Answer {
        let t = now_ns();
        let from = self.comm.process_at_rank(src);
        let mut failed = None;
        match self.tcp.iter_mut().find(|b| b.client == src) {
            None => {
                while self.blast_got[src as usize] < total {
                    let st = from.receive_into_with_tag(&mut self.buf[..], TAG_BLAST);
                    let n = st.count(u8::equivalent_datatype()) as u64;
                    self.blast_got[src as usize] += n;
                    self.figures.write_bytes += n;
                }
            }
            Some(b) => match accept_now(b, &self.who) {
                None => failed = Some(format!("{}: no TCP connection from rank {src}", self.who)),
                Some(s) => {
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(60)));
                    while self.blast_got[src as usize] < total {
                        match s.read(&mut self.buf) {
                            Ok(0) => break,
                            Ok(n) => {
                                self.blast_got[src as usize] += n as u64;
                                self.figures.write_bytes += n as u64;
                            }
                            Err(e) if e.kind() == ErrorKind::Interrupted => {}
                            Err(e) => {
                                let peer = s.peer_addr().map_or_else(|_| "?".into(), |a| a.to_string());
                                failed = Some(format!(
                                    "{}: blast over TCP from rank {src} (connection from {peer}): {e}",
                                    self.who
                                ));
                                break;
                            }
                        }
                    }
                    // Polled again until the client is done: never a blocking read there.
                    let _ = s.set_nonblocking(true);
                }
            },
        }
        self.figures.net_ns += now_ns() - t;
        match failed {
            Some(m) => Err((-1, m)),
            None => Ok(self.blast_got[src as usize]),
        }
    }

    /// Accepts waiting TCP connections and takes the bytes that arrived; whether any did.
    fn poll_tcp(&mut self) -> bool {
        let mut got = false;
        let who = &self.who;
        for b in &mut self.tcp {
            if let Some(l) = &b.listener
                && let Some(s) = admit(l, &b.token, false, |m| stranger(who, b.client, &m))
            {
                let _ = s.set_nonblocking(true);
                b.stream = Some(s);
                b.listener = None;
            }
            let Some(s) = b.stream.as_mut() else { continue };
            let t = now_ns();
            if let Ok(n) = s.read(&mut self.buf)
                && n > 0
            {
                self.blast_got[b.client as usize] += n as u64;
                self.figures.write_bytes += n as u64;
                let d = now_ns() - t;
                self.figures.net_ns += d;
                self.figures.busy_ns += d;
                got = true;
            }
        }
        got
    }

    fn reply(&mut self, src: i32, slot: u32, a: Answer) {
        let mut b = [0u8; STATUS_BYTES];
        let n = match &a {
            Ok(count) => encode_status(&mut b, 0, *count, ""),
            Err((code, text)) => encode_status(&mut b, if *code == 0 { -1 } else { *code }, 0, text),
        };
        let t = now_ns();
        self.comm.process_at_rank(src).send_with_tag(&b[..n], TAG_STATUS + slot as i32);
        self.figures.net_ns += now_ns() - t;
    }
}

/// The connection of a client that ended its blast before this server took it off the
/// listener's queue (the client connected before it sent anything, so it is there).
fn accept_now<'b>(b: &'b mut TcpBlast, who: &str) -> Option<&'b mut TcpStream> {
    if b.stream.is_none() {
        let l = b.listener.take()?;
        b.stream = Some(admit(&l, &b.token, true, |m| stranger(who, b.client, &m))?);
    }
    b.stream.as_mut()
}

/// Names a stranger's connection to the blast listener of client `client`, dropped.
fn stranger(who: &str, client: i32, what: &str) {
    eprintln!(
        "warning: {who}: dropped a connection to the blast listener of rank {client} from {what}; it is not the client"
    );
}

/// A failed disk call as a status: its errno and the message naming the server and the call
/// (the client's error names the file and the offset).
/// The file of request `h` in `store`, or the answer saying why there is none (a function of
/// the fields it needs, so a request borrows the server's buffer beside it: nothing is copied
/// or allocated per request but on an error).
fn held<'s>(
    store: &'s mut std::result::Result<Store, String>,
    who: &str,
    h: Header,
) -> std::result::Result<&'s mut Held, (i32, String)> {
    let store = store.as_mut().map_err(|e| (-1, e.clone()))?;
    match store.by_gid.get(h.gid as usize).copied().flatten() {
        Some(k) => Ok(&mut store.held[k]),
        None => Err((-1, format!("{who} holds no file {}", h.gid))),
    }
}

fn io_answer(who: &str, call: &'static str, e: std::io::Error) -> (i32, String) {
    (e.raw_os_error().unwrap_or(-1), format!("{who}: {call}: {e}"))
}

/// A listener for client worker `c` on the address it reaches this host by: loopback when it
/// runs on this host, else this host's own address (its name resolved); the address to send.
fn listen_for(w: &WorldInfo, c: u32) -> std::io::Result<(TcpListener, std::net::SocketAddr)> {
    use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
    let host = &w.hosts[w.rank as usize];
    let ip = if w.hosts.get(c as usize) == Some(host) {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        (&**host, 0).to_socket_addrs()?.map(|a| a.ip()).find(|ip| !ip.is_loopback()).ok_or_else(|| {
            std::io::Error::other(format!("host {host}'s name resolves to no address other ranks reach"))
        })?
    };
    let l = TcpListener::bind((ip, 0))?;
    l.set_nonblocking(true)?;
    let addr = l.local_addr()?;
    Ok((l, addr))
}

/// Who a server is, in every message it writes: `server 1 (rank 3 on h2)`.
pub(super) fn who(j: u32, w: &WorldInfo) -> String {
    format!("server {j} (rank {} on {})", w.rank, w.hosts[w.rank as usize])
}
