// A Rust program that panics in a function of its own: the "rust_panic"
// exception filter of sonde dap stops at the panic, the panicking frame on
// the stack (dap's TestRustPanicFilter).
fn check(n: usize) -> usize {
    if n > 2 {
        panic!("n is {}", n); /* BP:panic */
    }
    n * 2
}

fn main() {
    let mut total = 0;
    for i in 0..5 {
        total += check(i);
    }
    println!("{}", total);
}
