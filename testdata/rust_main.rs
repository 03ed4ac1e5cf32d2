// Test program for StopAtMain in Rust (tcf/services): the ELF symbol main
// is the runtime's shim; DWARF marks rust_main::main as the program's main
// (DW_AT_main_subprogram).
#[inline(never)]
fn work(n: u64) -> u64 {
    (0..n).sum()
}

fn main() {
    let s = work(10); // RUST_MAIN_FIRST_LINE
    std::process::exit(if s == 45 { 0 } else { 1 });
}
