//! Run a scenario file and print its summary JSON (a debugging aid; the
//! user-facing CLI is `ccbench`).
fn main() {
    let path = std::env::args().nth(1).expect("usage: runone SCENARIO.toml [key=value ...]");
    let overrides: Vec<String> = std::env::args().skip(2).collect();
    let text = std::fs::read_to_string(&path).expect("read scenario");
    let t0 = std::time::Instant::now();
    match ccbench_core::run(&text, &path, &overrides, &mut || false) {
        Ok(Some(mut out)) => {
            out.summary.engine.wall_s = t0.elapsed().as_secs_f64();
            println!("{}", serde_json::to_string_pretty(&out.summary).unwrap());
        }
        Ok(None) => eprintln!("interrupted"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
