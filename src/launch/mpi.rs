//! The MPI launcher (`launcher = mpi`, in a build with the `mpi` feature): under `mpirun -np N
//! iolab ...` every rank runs workers; rank 0 reads the command line, plans, tells the other
//! ranks each phase, gathers their samples, and prints and stores; the other ranks serve rank
//! 0's orders until it says stop, and print nothing unless they fail (docs/mpi.md).
//!
//! A phase: rank 0 broadcasts the order (the resolved spec, the phase, the files and their
//! identities; every rank rebuilds the same plan from the spec, a pure function). Each rank
//! opens its workers' files (threads, `workers / ranks` of them), all ranks meet at an
//! `MPI_Barrier`, and each worker times its own I/O from there. Each rank then sends its
//! samples (or its error) up a binomial tree to rank 0 (`mpi_tree`; straight to rank 0 when
//! traced or with I/O servers); rank 0 waits for them without blocking, so a signal still ends
//! the run. MPI is only ever called from each rank's main thread (`MPI_THREAD_FUNNELED`).

use std::time::Duration;

use mpi::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::error::{Error, Result};
use crate::launch::launched::Launched;
use crate::launch::mpi_gather::run_phase_with;
use crate::launch::mpi_hosts::{self, HostFiles};
use crate::launch::mpi_order::{Order, PhaseOrder, REPLY, broadcast_order, receive_order};
use crate::launch::mpi_reply::Reply;
use crate::launch::mpi_start::{self, Joined};
use crate::launch::mpi_sync::{phase_barrier, wear_cross};
use crate::launch::mpi_watch::{self, RankWatch, share};
use crate::launch::world::{WorldInfo, my_workers, placed, set_world, world};
use crate::launch::{io_server, mpi_clock, mpi_trace, mpi_tree, slurm, started_by, strategy_mpi, threads};
use crate::plan::RunPlan;
use crate::spec::{OpKind, Spec};
use crate::worker::{Monitor, PhaseJob, WorkerSample};

/// Rank 0's hold on MPI: ends it (and tells the other ranks to end) in [`Session::finish`].
pub struct Session {
    universe: mpi::environment::Universe,
}

/// Fixes glibc's malloc thresholds where its own moving rule ends for large blocks (up to 32
/// MiB from the heap, whose top is kept up to 64 MiB), so the MPI library's per-call buffers are
/// reused, not given back and faulted in again: left to the rule, OMPIO's two 16 MiB buffers
/// took a page fault per 4 KiB at every collective write (docs/performance.md).
fn steady_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt sets two numbers of the allocator, before MPI allocates anything.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Joins the MPI world when an MPI launcher (or srun, with an MPI plugin or several tasks)
/// started this process; without one, `None` and nothing happens. Every rank but 0 serves rank
/// 0 here and exits; rank 0 gets its session. A launch that cannot make one world (srun with
/// another plugin than this build's MPI takes; a binary built for another MPI: each process a
/// world of its own) is an error, said by the first process only.
pub fn start() -> Result<Option<Session>> {
    let Some(launch) = started_by::start() else { return Ok(None) };
    // MPI_Get_library_version may be called before MPI starts.
    let version = mpi::environment::library_version().unwrap_or_default();
    let said_once = |err: Error, initialised: bool| -> Error {
        if launch.rank != 0 {
            if initialised {
                // SAFETY: ending the process; nothing of ours is in flight.
                unsafe { mpi::ffi::MPI_Finalize() };
            }
            std::process::exit(err.exit_code());
        }
        err
    };
    if let Some(plugin) = &launch.srun {
        slurm::check_plugin(plugin, launch.size, &version).map_err(|e| said_once(e, false))?;
    }
    // A file size limit is an error of the write that meets it, on every rank.
    // SAFETY: setting a signal's disposition has no memory-safety preconditions.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    steady_heap();
    let Some((universe, threading)) = mpi::initialize_with_threading(Threading::Funneled) else {
        return Err(Error::Run("MPI was already initialised".into()));
    };
    let comm = universe.world();
    let (rank, size) = (comm.rank() as u32, comm.size() as u32);
    if u64::from(size) != launch.size {
        let err = match &launch.srun {
            Some(plugin) => {
                slurm::check_world(plugin, launch.size, size.into(), &version).err().unwrap_or_else(|| {
                    Error::Run(format!("srun started {} tasks in a world of {size}", launch.size))
                })
            }
            None => Error::spec(
                "mpirun",
                &launch.var,
                format!(
                    "the launcher started {} processes but MPI sees a world of {size}: this iolab was built with {}; start it with that MPI's mpirun",
                    launch.size,
                    slurm::library_name(&version)
                ),
            ),
        };
        return Err(said_once(err, true));
    }
    if threading < Threading::Funneled {
        return Err(Error::Run(format!("MPI offers only {threading:?} threading; iolab needs Funneled")));
    }
    let Joined { hosts, cpus, clocks } = mpi_start::exchange(&comm).map_err(|e| said_once(e, true))?;
    let (clock_offset_ns, clock_bound_ns) = mpi_clock::offsets(&comm, &clocks);
    let notes = if rank == 0 { mpi_clock::other_clocks(&hosts, &clocks, &clock_offset_ns) } else { vec![] };
    set_world(WorldInfo { rank, size, hosts, clock_offset_ns, clock_bound_ns, cpus, notes });
    if rank == 0 {
        // mpirun passes SIGUSR1 on to its ranks (its SIGINT and SIGTERM kill them): a stop
        // that keeps what was measured and cleans up, as SIGINT does on one host.
        crate::env::signals::also_stop_on(libc::SIGUSR1);
    }
    if rank != 0 {
        let code = serve(&comm);
        drop(universe);
        std::process::exit(code);
    }
    Ok(Some(Session { universe }))
}

impl Session {
    /// Ends the MPI world with rank 0's exit code: an interrupted run aborts every rank (some
    /// may be mid-phase); any other end tells the other ranks to stop with the same code and
    /// finalises.
    pub fn finish(self, code: i32) {
        let comm = self.universe.world();
        if code > 128 {
            comm.abort(code);
        }
        let _ = broadcast_order(&comm, &Order::Stop(code));
        drop(self.universe);
    }
}

/// The body of every rank but 0: carry out phase orders until told to stop; the exit code.
fn serve(comm: &SimpleCommunicator) -> i32 {
    // The stop signals of mpirun end a serving rank at once (rank 0 keeps the results); its
    // SIGUSR1 is rank 0's to act on.
    // SAFETY: setting signal dispositions has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::signal(libc::SIGUSR1, libc::SIG_IGN);
    }
    let mut planned: Option<(Spec, RunPlan)> = None;
    let mut files = HostFiles::default();
    loop {
        let order = match receive_order(comm) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("error: rank {}: {e}", comm.rank());
                return 1;
            }
        };
        match order {
            Order::Stop(code) => {
                files.finish();
                return code;
            }
            Order::CheckSpool(specs) => {
                let w = world().expect("the world is known");
                let result = mpi_trace::check_spool(&specs, w).map(|()| vec![]).map_err(|e| e.to_string());
                let bytes = Reply { rank: comm.rank() as u32, result, servers: vec![] }.encode_or_failure().0;
                comm.process_at_rank(0).send_with_tag(&bytes[..], REPLY);
            }
            Order::Phase(p) => {
                let (result, servers) = if p.spec.servers.is_some() {
                    let plan = plan_of(&p, &mut planned);
                    io_server::serve_phase(&p, plan, &mut files)
                } else {
                    (serve_phase(&p, &mut planned, &mut files), vec![])
                };
                let (result, spills) = match result.and_then(mpi_trace::outgoing) {
                    Ok(out) => (Ok(out.wires), out.spills),
                    Err(e) => (Err(e.to_string()), vec![]),
                };
                let reply = Reply { rank: comm.rank() as u32, result, servers };
                if mpi_tree::up_the_tree(&p.spec) {
                    let offset = world().and_then(|w| w.clock_offset_ns.get(comm.rank() as usize).copied());
                    mpi_tree::send_up(comm, reply, offset.unwrap_or(0), &mut || {
                        mpi_watch::pass_stop(p.seq);
                    });
                    continue;
                }
                let (bytes, whole) = reply.encode_or_failure();
                comm.process_at_rank(0).send_with_tag(&bytes[..], REPLY);
                // The traced ops after the reply that says they follow, a chunk at a time.
                mpi_trace::send(comm, if whole { &spills } else { &[] });
            }
        }
    }
}

/// This rank's part of a phase: its host's files made ready (by the host's first rank, when
/// the directory is node-local), then its workers, timed from the barrier all ranks meet at.
/// Every rank meets two barriers per phase, whatever fails: files ready, then start.
fn serve_phase(
    p: &PhaseOrder,
    planned: &mut Option<(Spec, RunPlan)>,
    files: &mut HostFiles,
) -> Result<Vec<WorkerSample>> {
    let plan = plan_of(p, planned);
    let barrier = phase_barrier;
    let w = world().expect("the world is known");
    let engine = crate::worker::registry::find(&p.spec.engine);
    // A rank that fails before its workers start still meets the others after a stonewall.
    let wears_out = p.spec.phases.get(p.phase).is_some_and(|ph| {
        matches!(p.spec.phase_bound(ph), Some(crate::spec::TimeBound::Stonewall { wear_out: true, .. }))
    });
    let meet_anyway = || {
        if wears_out {
            wear_cross(0);
        }
    };
    let (Some(phase), Some(engine)) = (plan.phases.get(p.phase), engine) else {
        barrier();
        barrier();
        meet_anyway();
        return Err(Error::Run(format!("no phase {} or no engine {} here", p.phase, p.spec.engine)));
    };
    let host = &w.hosts[w.rank as usize];
    let elsewhere = *host != w.hosts[0] && engine.def.caps.real_io;
    let first_on_host = w.hosts.iter().position(|h| h == host) == Some(w.rank as usize);
    let ready = if elsewhere && first_on_host {
        let mine = |n: usize, read: bool, r: u32| my_workers(n, read, &p.spec, w, r);
        let used = mpi_hosts::host_files(plan, w, host, mine);
        files.prepare(&p.spec, plan, p.phase, &p.paths, &p.ids, p.tag, &used).map(|_| ())
    } else {
        Ok(())
    };
    barrier();
    let mine = my_workers(phase.workers.len(), phase.op == OpKind::Read, &p.spec, w, w.rank);
    // Ranks on another host than rank 0 see the files (the namespace) through their own client:
    // check them there and set their own cache state.
    let md = plan.namespace.as_ref().filter(|_| elsewhere && phase.op.is_metadata());
    let local = ready.and_then(|()| match md {
        Some(ns) => mpi_hosts::namespace_here(p, ns, phase, first_on_host),
        None if elsewhere => mpi_hosts::local_view(p, phase, &mine),
        None => Ok((p.ids.clone(), None)),
    });
    let (ids, resident) = match local {
        Ok(v) => v,
        Err(e) => {
            barrier();
            meet_anyway();
            return Err(e);
        }
    };
    let sizes: Vec<u64> = plan.files.iter().map(|f| f.size_bytes).collect();
    let job = PhaseJob {
        spec: &p.spec,
        phase,
        paths: &p.paths,
        ids: &ids,
        sizes: &sizes,
        engine,
        tag: p.tag,
        extents: &p.extents,
        workdirs: &p.workdirs,
        namespace: plan.namespace.as_ref(),
    };
    let samples = match p.spec.strategy {
        None => {
            let watch = RankWatch::new(p.seq, p.report, share(&p.spec, phase, &mine));
            threads::run_workers(&job, &mine, Some(&barrier), Some(&wear_cross), &watch)?
        }
        Some(_) => {
            barrier();
            strategy_mpi::run_rank(&job, w.rank, w.size)?
        }
    };
    Ok(samples.into_iter().map(|s| placed(s, w, resident)).collect())
}

/// The plan of the order's spec, made once per spec (a pure function of it).
fn plan_of<'a>(p: &PhaseOrder, planned: &'a mut Option<(Spec, RunPlan)>) -> &'a RunPlan {
    if planned.as_ref().is_none_or(|(s, _)| *s != p.spec) {
        *planned = Some((p.spec.clone(), crate::plan::plan(&p.spec)));
    }
    &planned.as_ref().expect("planned above").1
}

/// On rank 0, before a traced run (after its own check): every other rank checks its own trace
/// spool for `specs` (the order and reply of a phase, without I/O); the lowest rank's refusal
/// is the run's, exit 2, before anything is made or stored.
pub fn check_spools(specs: &[Spec]) -> Result<()> {
    let Some(w) = world().filter(|w| w.size > 1) else { return Ok(()) };
    let comm = SimpleCommunicator::world();
    broadcast_order(&comm, &Order::CheckSpool(specs.to_vec()))?;
    let mut refusals: Vec<(u32, String)> = vec![];
    for _ in 1..w.size {
        let probed = loop {
            if let Some(p) = comm.any_process().immediate_matched_probe_with_tag(REPLY) {
                break p;
            }
            if let Some(sig) = crate::env::signals::pending() {
                return Err(Error::Interrupted(sig));
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        let (bytes, status) = probed.matched_receive_vec::<u8>();
        let from = status.source_rank() as u32;
        match Reply::decode(&bytes).map(|r| r.result) {
            Ok(Ok(_)) => {}
            Ok(Err(msg)) => refusals.push((from, msg)),
            Err(e) => refusals.push((from, format!("rank {from} sent something that is not a reply: {e}"))),
        }
    }
    match refusals.into_iter().min_by_key(|(r, _)| *r) {
        Some((_, msg)) => Err(Error::spec("trace", "true", msg)),
        None => Ok(()),
    }
}

/// Rank 0's side of a phase: the order to every rank, its own workers, then every rank's
/// samples (waited for without blocking, so a signal still ends the run).
pub fn run_phase(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Launched> {
    run_phase_with(job, monitor, |mine, watch| {
        threads::run_workers(job, mine, Some(&phase_barrier), Some(&wear_cross), watch)
    })
}

/// Rank 0's side of a strategy phase: its role, then every rank's samples, with the most
/// commits in flight at once counted from all of them.
pub fn run_strategy(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Launched> {
    let mut launched = run_phase_with(job, monitor, |_, _| {
        phase_barrier();
        let w = world().ok_or_else(|| Error::Run("launcher = mpi outside an MPI world".into()))?;
        strategy_mpi::run_rank(job, 0, w.size)
    })?;
    crate::strategy::count_in_flight(&mut launched.samples);
    Ok(launched)
}
