//! The crate's modules depend downward only (lib.rs): a scenario (the
//! spec) builds the runtime, never the reverse; congestion controls know
//! nothing of the TCP sender that drives them; a segment's scoreboard
//! knows nothing of the rate sampler that reads it; inside `scenario`, the
//! schedule resolver and the builder are below the parser; no top-level
//! modules name each other around a circle. Each rule reads
//! the non-test code of the files it covers (comments and `#[cfg(test)]`
//! modules left out).

use std::fs;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).expect("read src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code lines before its first `#[cfg(test)]`, without comments.
fn code(path: &Path) -> Vec<(usize, String)> {
    let text = fs::read_to_string(path).expect("read file");
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .map(|(i, l)| (i + 1, l.split("//").next().unwrap_or("").to_string()))
        .filter(|(_, l)| !l.trim().is_empty())
        .collect()
}

/// Every `file:line` under `root` (minus test files) whose code names `needle`.
fn uses(files: &[PathBuf], needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy();
        if name.ends_with("tests.rs") {
            continue;
        }
        for (n, l) in code(f) {
            if l.contains(needle) {
                hits.push(format!("{}:{n}: {}", f.strip_prefix(src()).unwrap().display(), l.trim()));
            }
        }
    }
    hits
}

fn under(dir: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    rust_files(&src().join(dir), &mut v);
    v
}

#[test]
fn the_runtime_never_imports_the_scenario() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let runtime: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| !f.starts_with(src().join("scenario")) && f.file_name().unwrap() != "lib.rs")
        .collect();
    assert!(runtime.len() > 40, "{} files", runtime.len());
    let hits = uses(&runtime, "crate::scenario");
    assert!(hits.is_empty(), "runtime code names the scenario:\n{}", hits.join("\n"));
}

#[test]
fn congestion_controls_know_nothing_of_the_tcp_sender() {
    let hits = uses(&under("cc"), "crate::tcp");
    assert!(hits.is_empty(), "cc/ names tcp:\n{}", hits.join("\n"));
}

#[test]
fn the_scoreboard_is_below_the_rate_sampler() {
    let f = [src().join("tcp/scoreboard.rs")];
    let hits = [uses(&f, "super::rate"), uses(&f, "tcp::rate"), uses(&f, "RateSampler")].concat();
    assert!(hits.is_empty(), "{}", hits.join("\n"));
    assert!(!uses(&[src().join("tcp/rate.rs")], "scoreboard::").is_empty(), "the rule reads the files it means");
}

#[test]
fn inside_the_scenario_the_resolver_and_the_builder_are_below_the_parser() {
    let timeline = uses(&[src().join("scenario/timeline.rs")], "super::");
    assert!(timeline.is_empty(), "{}", timeline.join("\n"));
    let parser = uses(&[src().join("scenario/mod.rs")], "build::");
    assert!(parser.is_empty(), "{}", parser.join("\n"));
    assert!(!uses(&[src().join("scenario/build.rs")], "super::").is_empty(), "the rule reads the files it means");
}

/// The top-level module a file belongs to (`tcp` for `tcp/rack.rs`).
fn top_module(f: &Path) -> String {
    let rel = f.strip_prefix(src()).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

/// No two top-level modules name each other, directly or around a circle
/// (a packet's ACE field once read its masks from `tcp::accecn`, which
/// reads packets).
#[test]
fn top_level_modules_form_no_circle() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files.iter().filter(|f| !f.file_name().unwrap().to_string_lossy().ends_with("tests.rs")) {
        let from = top_module(f);
        if from == "lib" {
            continue;
        }
        for (_, l) in code(f) {
            for (i, _) in l.match_indices("crate::") {
                let to: String = l[i + 7..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
                if !to.is_empty() && to != from {
                    deps.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    assert!(deps["sim"].contains("link") && deps["tcp"].contains("cc"), "the rule reads the imports: {deps:?}");
    // Depth-first search for a back edge, reporting the circle it closes.
    fn visit(m: &str, deps: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) {
        if let Some(i) = path.iter().position(|p| p == m) {
            panic!("modules in a circle: {} -> {m}", path[i..].join(" -> "));
        }
        if done.contains(m) {
            return;
        }
        path.push(m.to_string());
        for d in deps.get(m).into_iter().flatten() {
            visit(d, deps, path, done);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut done = BTreeSet::new();
    for m in deps.keys() {
        visit(m, &deps, &mut Vec::new(), &mut done);
    }
}
