//! The `iolab` binary: join the MPI world when an MPI launcher started it (in a build with the
//! `mpi` feature), parse the command line, run the command, map errors to exit codes (0 ok,
//! 1 run failed, 2 bad input, 130/143 interrupted; 0 and no message when the reader of stdout
//! goes away, as with `iolab ... | head`).

use clap::Parser;

fn main() {
    // `iolab --version` (or help) on every node of an allocation (`srun -N3 iolab --version`)
    // asks each process alone: it joins no world, whatever started it.
    #[cfg(feature = "mpi")]
    let asks =
        matches!(std::env::args().nth(1).as_deref(), Some("--version" | "-V" | "--help" | "-h" | "help"));
    #[cfg(feature = "mpi")]
    let session = match if asks { Ok(None) } else { iolab::launch::mpi::start() } {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(e.exit_code());
        }
    };
    let code = run();
    #[cfg(feature = "mpi")]
    if let Some(s) = session {
        s.finish(code);
    }
    std::process::exit(code);
}

/// The command line's command; its exit code.
fn run() -> i32 {
    let cli = match iolab::cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    iolab::env::signals::install();
    match iolab::cmd::main(cli) {
        Ok(()) => 0,
        // The reader of stdout went away (`iolab ... | head`): nothing more to say.
        Err(e) if e.is_broken_pipe() => 0,
        // A stop signal that ended a command by way of another error (an interrupted query,
        // a read cut short): the exit code says it was the signal.
        // (A deadline's SIGALRM is tune's own business, not a stop from outside.)
        Err(e)
            if !matches!(e, iolab::Error::Interrupted(_))
                && iolab::env::signals::pending().is_some_and(|s| s != libc::SIGALRM) =>
        {
            let sig = iolab::env::signals::pending().unwrap_or(libc::SIGINT);
            eprintln!("error: {}", iolab::Error::Interrupted(sig));
            128 + sig
        }
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
