//! The `iolab` binary: parse the command line, run the command, map errors to exit codes
//! (0 ok, 1 run failed, 2 bad input, 130/143 interrupted).

use clap::Parser;

fn main() {
    let cli = iolab::cli::Cli::parse();
    iolab::env::signals::install();
    if let Err(e) = iolab::cmd::main(cli) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
