//! The `iolab` binary: parse the command line, run the command, map errors to exit codes
//! (0 ok, 1 run failed, 2 bad input, 130/143 interrupted; 0 and no message when the reader of
//! stdout goes away, as with `iolab ... | head`).

use clap::Parser;

fn main() {
    let cli = iolab::cli::Cli::parse();
    iolab::env::signals::install();
    if let Err(e) = iolab::cmd::main(cli) {
        if e.is_broken_pipe() {
            // The reader of stdout went away (`iolab ... | head`): nothing more to say.
            std::process::exit(0);
        }
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
