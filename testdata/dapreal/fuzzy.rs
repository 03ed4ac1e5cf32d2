// fuzzy: a "did you mean" helper over Debian's strsim crate (librust-strsim-dev,
// /usr/share/cargo/registry/strsim-0.10.0), the program of the fifth real-program
// trial of `sonde dap` (bench/dap/REAL-PROGRAMS.md). Built without cargo:
//
//	rustc --edition 2015 --crate-type rlib --crate-name strsim -g -C opt-level=0 .../strsim-0.10.0/src/lib.rs -o libstrsim.rlib
//	rustc --edition 2021 -g -C opt-level=0 --extern strsim=libstrsim.rlib fuzzy.rs
//
// Usage: fuzzy WORD (suggestions for WORD among the commands) or fuzzy
// --panic WORD (hamming of WORD and "status" unwrapped: a panic when their
// lengths differ). The "// @NAME" comments mark lines the DAP scripts use.
use std::collections::HashMap;
use std::rc::Rc;

#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Exact,
    Close { distance: usize, score: f64 },
    Far(usize),
}

struct Suggestion {
    name: String,
    verdict: Verdict,
}

struct Catalog {
    commands: Rc<Vec<String>>,
    aliases: HashMap<String, &'static str>,
    scorer: Box<dyn Fn(&str, &str) -> f64>,
}

impl Catalog {
    fn new(names: &[&str]) -> Catalog {
        let commands: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut aliases = HashMap::new();
        aliases.insert("st".to_string(), "status");
        aliases.insert("co".to_string(), "commit");
        aliases.insert("ci".to_string(), "commit");
        Catalog { commands: Rc::new(commands), aliases, scorer: Box::new(strsim::jaro_winkler) }
    }

    fn judge(&self, word: &str, name: &str) -> Verdict {
        let distance = strsim::damerau_levenshtein(word, name); // @JUDGE
        if distance == 0 {
            return Verdict::Exact;
        }
        let score = (self.scorer)(word, name);
        if distance <= 2 || score > 0.9 {
            Verdict::Close { distance, score }
        } else {
            Verdict::Far(distance)
        }
    }

    fn suggest(&self, word: &str) -> Vec<Suggestion> {
        if let Some(target) = self.aliases.get(word) {
            return vec![Suggestion { name: target.to_string(), verdict: Verdict::Exact }];
        }
        let shared = Rc::clone(&self.commands);
        let mut out: Vec<Suggestion> = shared
            .iter()
            .map(|name| Suggestion { name: name.clone(), verdict: self.judge(word, name) })
            .filter(|s| s.verdict != Verdict::Far(0))
            .collect();
        let rank = |s: &Suggestion| match s.verdict {
            Verdict::Exact => 0,
            Verdict::Close { distance, .. } => distance,
            Verdict::Far(d) => 100 + d,
        };
        out.sort_by_key(|s| rank(s)); // @SORTED
        out
    }
}

fn best<'a>(found: &'a [Suggestion]) -> Option<&'a str> {
    let first = found.first()?;
    match first.verdict {
        Verdict::Far(_) => None,
        _ => Some(first.name.as_str()), // @BEST
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let catalog = Catalog::new(&["status", "commit", "checkout", "rebase", "stash", "fetch"]);
    if args.len() == 2 && args[0] == "--panic" {
        let word: &str = &args[1];
        let diff: usize = strsim::hamming(word, "status").unwrap(); // @PANIC
        println!("hamming {diff}");
        return;
    }
    let word: &str = args.first().map(|s| s.as_str()).unwrap_or("stauts");
    let found = catalog.suggest(word);
    let top = &found[..found.len().min(3)];
    let answer: Option<&str> = best(top);
    let dice = strsim::sorensen_dice(word, answer.unwrap_or(""));
    match answer {
        Some(name) => println!("did you mean {name}? (dice {dice:.3})"), // @ANSWER
        None => println!("no suggestion for {word}"),
    }
}
