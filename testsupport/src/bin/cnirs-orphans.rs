//! Prints what `skel::orphans` decides in this process's environment, as
//! one JSON object, with the time the decision took (the first, cold one,
//! which is what a plugin call pays): `cnirs-orphans [N]` also times N
//! more decisions made afresh and prints their mean.

use std::time::Instant;

fn main() {
    let t = Instant::now();
    let reaped = skel::orphans::reaped();
    let first = t.elapsed();
    let repeat: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let t = Instant::now();
    for _ in 0..repeat {
        std::hint::black_box(skel::orphans::report());
    }
    let mean = t.elapsed().as_nanos() / u128::from(repeat.max(1));
    let r = skel::orphans::report();
    let json = serde_json::json!({
        "reaped": reaped,
        "init_may_reap": r.init_may_reap,
        "zombies": r.zombies,
        "headroom": r.headroom,
        "first_us": first.as_micros() as u64,
        "mean_us": (mean / 1000) as u64,
    });
    println!("{json}");
}
