// ex_rustseq: Rust slices and Vecs for expr's subscripts (expr/rustseq_test.go),
// stopped in stop_here with them in the caller's frame. Each Vec has a slice
// over its elements, which gdb subscripts (gdb does not subscript a Vec).
#[inline(never)]
fn stop_here(n: usize) -> usize {
    std::hint::black_box(n)
}

struct Item {
    id: u32,
    weight: i16,
}

fn main() {
    let arr = [10i32, 20, 30, 40];
    let sl: &[i32] = &arr[1..];
    let chars: Vec<char> = "stauts".chars().collect();
    let cs: &[char] = chars.as_slice();
    let nums: Vec<i64> = (0..50).map(|i| i * i - 7).collect();
    let ns: &[i64] = &nums[..];
    let items = vec![Item { id: 3, weight: -2 }, Item { id: 8, weight: 5 }];
    let is: &[Item] = &items;
    let n = sl.len() + cs.len() + ns.len() + is.len() + items[0].id as usize + items[1].weight as usize;
    stop_here(n);
}
