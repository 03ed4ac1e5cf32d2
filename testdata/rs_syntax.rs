// rs_syntax: Rust values of every shape at one stop, for comparing how
// sonde prints them in Rust's syntax with gdb's Rust language support.
struct Point {
    x: i32,
    y: i32,
}
struct Pair(i32, f64);
struct Unit;
enum Shape {
    Circle { r: f64 },
    Square(u32),
    Empty,
}
#[derive(Clone, Copy)]
enum Color {
    Red,
    Blue,
}
union Bits {
    i: u32,
    f: f32,
}
struct Holder<'a> {
    name: &'a str,
    at: &'a Point,
    tags: [u8; 3],
    shape: Shape,
    color: Color,
    maybe: Option<&'a Point>,
    unit: (),
}

#[inline(never)]
fn stop_here(n: usize) -> usize {
    std::hint::black_box(n)
}

fn main() {
    let p = Point { x: 1, y: 2 };
    let t = (1i32, 2u8);
    let pr = Pair(3, 4.5);
    let u = Unit;
    let c = Shape::Circle { r: 1.5 };
    let sq = Shape::Square(7);
    let e = Shape::Empty;
    let o: Option<u32> = Some(5);
    let on: Option<u32> = None;
    let ch = 'x';
    let b = true;
    let arr = [1i32, 2, 3];
    let zeros = [0u16; 12];
    let empty: [i32; 0] = [];
    let sl: &[i32] = &arr[1..];
    let esl: &[i32] = &arr[..0];
    let s = "hi \"there\"";
    let pts = [Point { x: 1, y: 1 }, Point { x: 2, y: 2 }];
    let nested = (p.x, (t.0, 'y'));
    let col = Color::Blue;
    let bits = Bits { i: 0x3f800000 };
    let h = Holder { name: "box", at: &p, tags: [7, 8, 9], shape: Shape::Square(2), color: Color::Red, maybe: Some(&p), unit: () };
    let n = arr.len() + zeros.len() + empty.len() + sl.len() + esl.len() + s.len() + pts.len()
        + b as usize + ch as usize + nested.0 as usize + pr.0 as usize + t.1 as usize + col as usize
        + unsafe { bits.i } as usize + h.tags.len() + h.name.len() + h.at.x as usize
        + match (&u, &c, &sq, &e, &o, &on, &h.shape, &h.color, &h.maybe, &h.unit) {
            _ => 0,
        };
    stop_here(n);
}
