//! Times the core's batch decision on pattern and name files (one per line):
//! `cargo run --release --example profile_core -- INCLUDE EXCLUDE SERVERS NAMES`.
use std::time::Instant;

use toolfilter_fast::filter::StaticFilter;

fn lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path).expect("readable file").lines().map(str::to_string).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [include, exclude, servers, names] = &args[..] else {
        eprintln!("usage: profile_core INCLUDE EXCLUDE SERVERS NAMES");
        std::process::exit(2);
    };
    let (include, exclude) = (lines(include), lines(exclude));
    let (servers, names) = (lines(servers), lines(names));
    let empty: &[String] = &[];
    let started = Instant::now();
    let filter = StaticFilter::compile(&include, &exclude, empty, empty, include.is_empty()).expect("valid patterns");
    println!("compile: {:?}", started.elapsed());
    // TOOLFILTER_COMPILE_ROUNDS=N: the median of N more compiles (for profiling the build).
    if let Some(rounds) = std::env::var("TOOLFILTER_COMPILE_ROUNDS").ok().and_then(|r| r.parse::<usize>().ok()) {
        let mut times: Vec<_> = (0..rounds.max(1))
            .map(|_| {
                let started = Instant::now();
                let again = StaticFilter::compile(&include, &exclude, empty, empty, include.is_empty());
                assert!(again.is_ok());
                started.elapsed()
            })
            .collect();
        times.sort();
        println!("compile median of {}: {:?} (min {:?})", times.len(), times[times.len() / 2], times[0]);
        return;
    }
    let pairs: Vec<(&[u8], &[u8])> = servers.iter().zip(&names).map(|(s, n)| (s.as_bytes(), n.as_bytes())).collect();
    for threads in [1, 2] {
        let started = Instant::now();
        let rounds = 5;
        let mut visible = 0;
        for _ in 0..rounds {
            visible = filter.outcomes(&pairs, threads).iter().filter(|o| **o as u8 == 1).count();
        }
        let per_tool = started.elapsed().as_nanos() as f64 / (rounds * pairs.len()) as f64;
        println!("threads={threads}: {per_tool:.1} ns/tool, {visible} visible");
    }
}
