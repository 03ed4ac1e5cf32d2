// A program whose monomorphized names hold a tuple-struct constructor used
// as a function (Map<Copied<Iter<u8>>, Wrapper>: "NcB.._0" in v0 mangling),
// built with -C symbol-mangling-version=v0 by the demangler's tests.
#[derive(Debug, Clone, Copy)]
struct Wrapper(u8);

#[derive(Debug)]
struct Pair(u32, u32);

#[inline(never)]
fn wrap_all(v: &[u8]) -> Vec<Wrapper> {
    v.iter().copied().map(Wrapper).collect()
}

#[inline(never)]
fn pairs(n: u32) -> Vec<Pair> {
    (0..n).zip(1..n + 1).map(|(a, b)| Pair(a, b)).collect()
}

fn main() {
    let w = wrap_all(&[1, 2, 3]);
    let p = pairs(4);
    println!("{:?} {:?}", w, p);
}
