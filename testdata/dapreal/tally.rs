// tally: word statistics over Debian's itertools crate (librust-itertools-dev,
// with either), for the sixth real-program trial of sonde dap and sonde perf
// (bench/dap/REAL-PROGRAMS.md): group_by, sorted_by, kmerge, tuple_windows,
// join, partition_map with Either, a table of fn pointers, an enum, a
// HashMap, a trait object.
//
//	tally [ROUNDS] [--panic]   (ROUNDS > 1: repeat the work, for perf)
use itertools::{Either, Itertools};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Short,
    Long { letters: usize },
    Number(i64),
}

#[derive(Debug, Clone)]
pub struct Word {
    text: String,
    kind: Kind,
    line: u32,
}

pub struct Stat {
    name: &'static str,
    measure: fn(&[Word]) -> usize,
}

fn classify(text: &str, line: u32) -> Word {
    let kind = match text.parse::<i64>() {
        Ok(n) => Kind::Number(n),
        Err(_) if text.len() <= 3 => Kind::Short,
        Err(_) => Kind::Long { letters: text.chars().count() },
    };
    Word { text: text.to_string(), kind, line } // @CLASSIFY
}

fn longest(words: &[Word]) -> usize {
    words.iter().map(|w| w.text.len()).max().unwrap_or(0)
}

fn numbers(words: &[Word]) -> usize {
    words.iter().filter(|w| matches!(w.kind, Kind::Number(_))).count()
}

fn runs(words: &[Word]) -> usize {
    let mut n = 0;
    for (key, group) in &words.iter().group_by(|w| w.text.len()) {
        let g: Vec<&Word> = group.collect();
        if g.len() > 1 && key > 0 {
            n += g.len(); // @RUNS
        }
    }
    n
}

trait Report {
    fn title(&self) -> String;
}

impl Report for Stat {
    fn title(&self) -> String {
        format!("{:>8}", self.name)
    }
}

fn tally(text: &str, stats: &[Stat], out: &mut HashMap<String, usize>) -> Vec<Word> {
    let words: Vec<Word> = text
        .lines()
        .enumerate()
        .flat_map(|(i, l)| l.split_whitespace().map(move |w| classify(w, i as u32 + 1)))
        .collect();
    for s in stats {
        let v = (s.measure)(&words); // @MEASURE
        *out.entry(s.title()).or_insert(0) += v;
    }
    let (nums, texts): (Vec<i64>, Vec<&str>) = words.iter().partition_map(|w| match w.kind {
        Kind::Number(n) => Either::Left(n),
        _ => Either::Right(w.text.as_str()),
    });
    let pairs = texts.iter().tuple_windows().filter(|(a, b)| a < b).count();
    let merged: Vec<i64> = vec![nums.clone(), vec![7, 50, 99]].into_iter().kmerge().collect();
    *out.entry("pairs".to_string()).or_insert(0) += pairs + merged.len();
    let sorted = words.iter().sorted_by(|a, b| a.text.cmp(&b.text)).map(|w| w.text.as_str()).dedup().join(",");
    *out.entry("sorted".to_string()).or_insert(0) += sorted.len();
    words
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let text = "the quick brown fox 12 jumps over\nthe lazy dog 7 and 1999 cats\nof the big bad wolf 42 ran\n";
    let stats = [
        Stat { name: "longest", measure: longest },
        Stat { name: "numbers", measure: numbers },
        Stat { name: "runs", measure: runs },
    ];
    let mut out = HashMap::new();
    let mut words = Vec::new();
    for _ in 0..rounds {
        words = tally(text, &stats, &mut out);
    }
    if args.iter().any(|a| a == "--panic") {
        let idx = words.len() + out.len();
        println!("{}", words[idx].text); // @PANIC
    }
    let report = out.iter().sorted().map(|(k, v)| format!("{}={}", k.trim(), v)).join(" ");
    println!("{} words; {}", words.len(), report);
}
