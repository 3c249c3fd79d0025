//! The `colmem` binary: the program of the `colmem_cli` library.

fn main() -> std::process::ExitCode {
    colmem_cli::main()
}
