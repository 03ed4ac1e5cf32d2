// A CPU-bound Rust program whose function names are hard on the viewers'
// parsers: a trait method of a generic type ("<... as ...>::run"), a
// closure and angle brackets with commas.
//   perf_viewers_rs [MILLISECONDS]
use std::time::{Duration, Instant};

trait Work {
    fn run(&self, n: u64) -> u64;
}

struct Pair<A, B> {
    a: A,
    b: B,
}

impl Work for Pair<u32, u64> {
    #[inline(never)]
    fn run(&self, n: u64) -> u64 {
        let mut s = self.b;
        for i in 0..n {
            s = s.wrapping_mul(31).wrapping_add(self.a as u64 + i);
        }
        s
    }
}

#[inline(never)]
fn spin<W: Work>(w: &W, n: u64) -> u64 {
    let step = |k: u64| w.run(k) + 1;
    (0..n).map(|i| step(200 + i % 3)).fold(0, u64::wrapping_add)
}

fn main() {
    let ms: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let p = Pair { a: std::env::args().count() as u32, b: 7u64 };
    let end = Instant::now() + Duration::from_millis(ms);
    let mut sink = 0u64;
    while Instant::now() < end {
        sink = sink.wrapping_add(spin(&p, 50));
    }
    println!("{}", sink);
}
