// pp_rust: Rust's library collections and pointers at one stop, for
// comparing sonde's summaries with rust-gdb's printers.
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

#[derive(Debug)]
struct Point {
    x: i32,
    y: i32,
}

#[inline(never)]
fn stop_here(n: usize) -> usize {
    std::hint::black_box(n)
}

fn main() {
    let mut hm: HashMap<u32, u64> = HashMap::new();
    for i in 1..=5u32 {
        hm.insert(i, (i as u64) * 100);
    }
    let mut names: HashMap<String, Point> = HashMap::new();
    names.insert("a".to_string(), Point { x: 1, y: 2 });
    let mut hs: HashSet<i32> = HashSet::new();
    hs.insert(7);
    hs.insert(-3);
    let empty: HashMap<u8, u8> = HashMap::new();
    let rc = Rc::new(Point { x: 3, y: 4 });
    let rc2 = Rc::clone(&rc);
    let weak = Rc::downgrade(&rc);
    let arc = Arc::new(41i64);
    let bx = Box::new(Point { x: 5, y: 6 });
    let arr = [10i32, 20, 30, 40];
    let sl: &[i32] = &arr[1..];
    let s: &str = "hello";
    let mut dq: VecDeque<i32> = VecDeque::with_capacity(4);
    dq.push_back(1);
    dq.push_back(2);
    dq.push_front(0);
    let mut bt: BTreeMap<u32, i64> = BTreeMap::new();
    for i in 0..40u32 {
        bt.insert(i * 7 % 41, -(i as i64));
    }
    let mut bs: BTreeSet<String> = BTreeSet::new();
    bs.insert("pear".to_string());
    bs.insert("apple".to_string());
    let bt_empty: BTreeMap<u8, u8> = BTreeMap::new();
    let vp = vec![Point { x: 9, y: 8 }, Point { x: 7, y: 6 }];
    let vc: Vec<char> = "ok".chars().collect();
    let owned = String::from("owned");
    let sref: &String = &owned;
    let vref: &Vec<char> = &vc;
    let n = hm.len() + names.len() + hs.len() + empty.len() + rc.x as usize + rc2.y as usize
        + weak.strong_count() + *arc as usize + bx.x as usize + sl.len() + s.len() + dq.len() + vp.len() + bt.len() + bs.len() + bt_empty.len() + vc.len() + sref.len() + vref.len();
    stop_here(n);
}
