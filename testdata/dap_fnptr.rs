// Function values and fn pointers in Rust: dap's
// TestFunctionValuesMatchGDB compares sonde's watches at the marked line
// with gdb's print (in a Rust frame, gdb's Rust syntax).

pub struct Counter {
    n: i64,
}

impl Counter {
    #[inline(never)]
    pub fn bump(&mut self, by: i64) -> i64 {
        self.n += by;
        self.n
    }
}

pub struct Ops {
    name: &'static str,
    fun: fn(i32, i32) -> i32,
}

#[inline(never)]
fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[inline(never)]
fn shout(s: &str) {
    println!("{}!", s);
}

#[inline(never)]
fn apply(f: fn(i32, i32) -> i32, ops: &Ops, x: i32) -> i32 {
    let r = f(x, 2); /* BP:stop */
    (ops.fun)(r, 1)
}

fn main() {
    let ops = Ops { name: "add", fun: add };
    let mut c = Counter { n: 1 };
    let r = apply(add, &ops, 4);
    shout(ops.name);
    println!("{} {}", r, c.bump(r as i64));
}
