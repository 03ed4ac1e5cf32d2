// shop.rs: a Rust program with enums, Vec, String, Option, closures and
// threads, debugged through sonde dap by testdata/dapclient/realprog.js
// (lines are found by their @ markers).
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread;

#[derive(Debug, Clone)]
enum Item {
    Book { title: String, pages: u32 },
    Pen(u8),
    Nothing,
}

#[derive(Debug)]
struct Cart {
    owner: String,
    items: Vec<Item>,
    discount: Option<u32>,
    tags: [u16; 4],
}

impl Cart {
    fn price(&self) -> u32 {
        let mut total = 0;
        for it in &self.items {
            total += match it {
                Item::Book { pages, .. } => pages / 10, // @RS_BOOK
                Item::Pen(n) => *n as u32,
                Item::Nothing => 0,
            };
        }
        match self.discount {
            Some(d) => total - d, // @RS_DISCOUNT
            None => total,
        }
    }
}

fn tally(words: &[&str]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for w in words {
        *m.entry(w.to_string()).or_insert(0) += 1;
    }
    m
}

fn main() {
    let cart = Cart {
        owner: String::from("ada"),
        items: vec![
            Item::Book { title: "Dune".to_string(), pages: 412 },
            Item::Pen(3),
            Item::Nothing,
        ],
        discount: Some(5),
        tags: [7, 8, 9, 10],
    };
    let maybe: Option<&Item> = cart.items.first();
    let none: Option<i32> = None;
    let p = cart.price(); // @RS_PRICE
    let bump = 4;
    let add = |x: u32| x + bump;
    let q = add(p); // @RS_CLOSURE
    let counter = Arc::new(Mutex::new(0u64));
    let mut hs = Vec::new();
    for i in 0..3u64 {
        let c = Arc::clone(&counter);
        hs.push(thread::spawn(move || {
            let mut g = c.lock().unwrap();
            *g += i + 1; // @RS_THREAD
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    let t = tally(&["a", "b", "a"]);
    let v: Vec<i64> = (0..200).map(|x| x * 2).collect();
    println!("{} {} {:?} {:?} {} {} {}", p, q, maybe.is_some(), none, *counter.lock().unwrap(), t.len(), v.len()); // @RS_PRINT
    if std::env::args().nth(1).as_deref() == Some("crash") {
        let v: Vec<u8> = Vec::new();
        let i = std::env::args().count() + 10;
        println!("{}", v[i]); // @RS_PANIC
    }
}
