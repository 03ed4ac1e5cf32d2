// stk_rust_main.rs: a Rust program stopped in a sleep under its main
// (rustc marks stk_rust_main::main DW_AT_main_subprogram); gdb's backtrace
// ends there, above the runtime's lang_start frames and the C main.
use std::io::Write;

#[inline(never)]
fn deep(n: u32) -> usize {
    if n == 0 {
        std::thread::sleep(std::time::Duration::from_secs(1000));
        0
    } else {
        deep(n - 1) + 1
    }
}

fn main() {
    println!("ready");
    std::io::stdout().flush().unwrap();
    println!("{}", deep(3));
}
