// dapclient_prog.rs: the Rust program the DAP client scenario (testdata/dapclient)
// debugs; the shape and the "@NAME" markers of dapclient_prog.c.
//
//	dapclient_prog_rs         compute(&p, 2) and exit with its result (27, or 34
//	                    when the scenario has set local.x to 10)
//	dapclient_prog_rs wait    print "ready" and loop (to be attached to)
//	dapclient_prog_rs crash   abort() in crash(), for a core
use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};

struct Point {
    x: i32,
    y: i32,
    name: &'static str,
}

static COUNTER: AtomicI32 = AtomicI32::new(0);

#[inline(never)]
fn add(a: i32, b: i32) -> i32 {
    let sum = a + b; // @IN_ADD
    sum
}

#[inline(never)]
fn compute(p: &Point, scale: i32) -> i32 {
    let arr: [i32; 4] = [1, 2, 3, 4];
    let mut local = Point { x: p.x, y: p.y, name: p.name };
    let mut total = 0; // @BP1
    for i in 0..4 {
        let v = arr[i] * scale; // @LOG
        total += v; // @COND
    }
    local.x += total; // @NEXT_FROM
    let r = add(local.x, local.y); // @CALL_ADD
    COUNTER.fetch_add(r + local.name.len() as i32 - 6, Ordering::Relaxed); // @AFTER_ADD
    r
}

#[inline(never)]
fn crash(p: &Point, depth: i32) {
    let marker = depth * 7 + p.x;
    COUNTER.store(marker, Ordering::Relaxed);
    std::process::abort(); // @CRASH
}

#[inline(never)]
fn wait_forever() {
    let ticks = AtomicI32::new(0);
    println!("ready");
    std::io::stdout().flush().unwrap();
    loop {
        ticks.fetch_add(1, Ordering::Relaxed); // @WAIT
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn main() {
    let p = Point { x: 3, y: 4, name: "origin" };
    let arg = std::env::args().nth(1).unwrap_or_default();
    if arg == "wait" {
        wait_forever();
    }
    if arg == "crash" {
        crash(&p, 5); // @CRASH_CALLER
    }
    let result = compute(&p, 2); // @CALLER
    println!("result {}", result);
    std::process::exit(result);
}
