// step_inline.rs: line steps through functions inlined at opt-level=2,
// compared with gdb's step and next (dap tests): nested inlined calls and
// an inlined call that is the argument of a real one.
use std::hint::black_box;
use std::ptr::{addr_of_mut, write_volatile};

static mut SINK: i32 = 0;

#[inline(never)]
fn leaf(v: i32) -> i32 {
    unsafe { write_volatile(addr_of_mut!(SINK), v) };
    v * 2
}

#[inline(always)]
fn inner(x: i32) -> i32 {
    unsafe { write_volatile(addr_of_mut!(SINK), x) };
    leaf(x + 1)
}

#[inline(always)]
fn outer(x: i32) -> i32 {
    let r = inner(x * 3);
    r + 1
}

#[inline(never)]
#[no_mangle]
fn run(n: i32) -> i32 {
    let mut t = 0;
    t += outer(n);
    unsafe { write_volatile(addr_of_mut!(SINK), t) };
    t += leaf(inner(n));
    t
}

fn main() {
    let n = black_box(std::env::args().count() as i32 + 1);
    println!("{}", run(n));
}
