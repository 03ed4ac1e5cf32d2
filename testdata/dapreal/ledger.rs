// ledger.rs: a Rust program for the DAP client scenario (realprog.js --mode
// ledger): a generic struct with a HashMap, a Vec of an enum with struct,
// tuple and unit variants, Result and ?, trait objects, a tuple struct, a
// closure passed to a generic function, recursion and spinning threads.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::thread;

#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Deposit { account: String, cents: i64 },
    Withdraw(String, i64),
    Transfer { from: String, to: String, cents: i64 },
    Close,
}

pub trait Shape {
    fn area(&self) -> f64;
    fn name(&self) -> String { String::from("shape") }
}

pub struct Square(pub f64);
pub struct Circle { pub r: f64 }

impl Shape for Square {
    fn area(&self) -> f64 { self.0 * self.0 }
    fn name(&self) -> String { format!("square {}", self.0) }
}
impl Shape for Circle {
    fn area(&self) -> f64 { 3.14159 * self.r * self.r }
}

#[derive(Debug)]
pub enum LedgerError { NoAccount(String), Overdraft { need: i64, have: i64 } }

impl fmt::Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{:?}", self) }
}

pub struct Ledger<K> {
    balances: HashMap<K, i64>,
    history: Vec<Entry>,
    limit: Option<i64>,
}

impl<K: std::hash::Hash + Eq + Clone + fmt::Debug> Ledger<K> {
    pub fn new(limit: Option<i64>) -> Self { Ledger { balances: HashMap::new(), history: Vec::new(), limit } }
    pub fn credit(&mut self, k: &K, cents: i64) -> i64 {
        let b = self.balances.entry(k.clone()).or_insert(0);
        *b += cents;
        *b
    }
    pub fn debit(&mut self, k: &K, cents: i64) -> Result<i64, LedgerError> {
        let have = *self.balances.get(k).ok_or_else(|| LedgerError::NoAccount(format!("{:?}", k)))?;
        let floor = self.limit.unwrap_or(0);
        if have - cents < -floor {
            return Err(LedgerError::Overdraft { need: cents, have });
        }
        self.balances.insert(k.clone(), have - cents); // @DEBIT
        Ok(have - cents)
    }
}

fn apply(l: &mut Ledger<String>, e: &Entry) -> Result<(), LedgerError> {
    match e {
        Entry::Deposit { account, cents } => { l.credit(account, *cents); }
        Entry::Withdraw(account, cents) => { l.debit(account, *cents)?; }
        Entry::Transfer { from, to, cents } => {
            l.debit(from, *cents)?;
            l.credit(to, *cents);
        }
        Entry::Close => {}
    }
    l.history.push(e.clone()); // @PUSH
    Ok(())
}

fn depth(n: u32) -> u32 {
    if n == 0 { return 0; } // @DEPTH0
    1 + depth(n - 1)
}

fn total<F: Fn(i64) -> bool>(l: &Ledger<String>, keep: F) -> i64 {
    l.balances.values().copied().filter(|v| keep(*v)).sum() // @TOTAL
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).cloned().unwrap_or_default();
    let mut l: Ledger<String> = Ledger::new(Some(50));
    let entries = vec![
        Entry::Deposit { account: "ada".to_string(), cents: 1000 },
        Entry::Deposit { account: "bob".to_string(), cents: 250 },
        Entry::Withdraw("ada".to_string(), 300),
        Entry::Transfer { from: "bob".to_string(), to: "ada".to_string(), cents: 275 },
        Entry::Withdraw("cyd".to_string(), 1),
        Entry::Close,
    ];
    let mut errors: Vec<String> = Vec::new();
    for e in &entries {
        if let Err(err) = apply(&mut l, e) {
            errors.push(err.to_string()); // @ERR
        }
    }
    let shapes: Vec<Box<dyn Shape>> = vec![Box::new(Square(2.0)), Box::new(Circle { r: 1.5 })];
    let areas: Vec<f64> = shapes.iter().map(|s| s.area()).collect();
    let names: Vec<String> = shapes.iter().map(|s| s.name()).collect();
    let rich = total(&l, |v| v > 100);
    let d = depth(5);
    let counter = Arc::new(Mutex::new(0u64));
    let mut hs = Vec::new();
    for i in 0..3u64 {
        let c = Arc::clone(&counter);
        hs.push(thread::spawn(move || {
            let mut spins = 0u64;
            loop {
                spins += 1;
                if mode_is_spin(i) && spins < u64::MAX { continue; } // @SPIN
                *c.lock().unwrap() += i;
                break;
            }
        }));
    }
    println!("{:?} {:?} {:?} {} {} {}", errors, areas, names, rich, d, l.history.len());
    if mode == "panic" {
        let v: Vec<i32> = Vec::new();
        println!("{}", v[errors.len()]); // @PANIC
    }
    if mode == "spin" {
        for h in hs { h.join().unwrap(); }
    }
    println!("done {}", *counter.lock().unwrap());
}

fn mode_is_spin(i: u64) -> bool {
    std::env::args().nth(1).as_deref() == Some("spin") && i < 2
}
