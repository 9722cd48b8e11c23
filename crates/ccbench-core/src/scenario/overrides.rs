//! `--set key.path=value` overrides, applied to the document text before it
//! is read, so they go through exactly the same checks as the file. Array
//! elements are addressed by index (`links.0.rate`) or by their `id`
//! (`links.bottleneck.rate`). Values are TOML (`5`, `true`, `"x"`); anything
//! that does not parse as TOML is taken as a string (`rate=50Mbit`).

use super::error::{line_col, render_path, Problem, ScenarioError, Seg};
use toml_edit::{DocumentMut, Item, Value};

/// An override as applied: the key path it set (`links[0].rate`, as
/// problems name keys) and its key as written (`links.bottleneck.rate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub key: String,
    pub written: String,
    /// The outermost table the override created to reach its key, if any
    /// (`foo` for `--set foo.bar=1` when there was no `foo`).
    pub created: Option<String>,
}

impl Applied {
    /// Whether a problem at `key` is about this override's value, or about
    /// a table it created (an unknown `foo` of `--set foo.bar=1`).
    pub fn covers(&self, key: &str) -> bool {
        let under = |base: &str| key == base || key.strip_prefix(base).is_some_and(|r| r.starts_with('.') || r.starts_with('['));
        under(&self.key) || self.created.as_deref().is_some_and(under)
    }
}

/// Apply overrides to the text; returns the new text and where each
/// override landed.
pub fn apply(text: &str, file: &str, overrides: &[String]) -> Result<(String, Vec<Applied>), ScenarioError> {
    if overrides.is_empty() {
        return Ok((text.to_string(), Vec::new()));
    }
    let problem = |key: &str, message: String| Problem {
        file: "--set".into(),
        line: None,
        col: None,
        key: key.to_string(),
        message,
    };
    // A syntax error in the file keeps its line and column.
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let (line, col) = e.span().map(|sp| line_col(text, sp.start)).map_or((None, None), |(l, c)| (Some(l), Some(c)));
        ScenarioError { problems: vec![Problem { file: file.into(), line, col, key: String::new(), message: e.message().trim().to_string() }] }
    })?;
    let mut problems = Vec::new();
    let mut applied = Vec::new();
    for o in overrides {
        let Some((key, raw)) = o.split_once('=') else {
            problems.push(problem(o, "expected key.path=value".into()));
            continue;
        };
        let key = key.trim();
        let value: Value = raw.trim().parse().unwrap_or_else(|_| Value::from(raw.trim()));
        let (mut path, mut created) = (Vec::new(), None);
        match set(doc.as_item_mut(), key, value, &mut path, &mut created) {
            Ok(()) => applied.push(Applied { key: render_path(&path), written: key.to_string(), created: created.map(|c| render_path(&c)) }),
            Err(m) => problems.push(problem(key, m)),
        }
    }
    if problems.is_empty() {
        Ok((doc.to_string(), applied))
    } else {
        Err(ScenarioError { problems })
    }
}

/// Set `key` under `root` to `value`; `path` is where it landed, `created`
/// the first table it had to create on the way.
fn set(root: &mut Item, key: &str, value: Value, path: &mut Vec<Seg>, created: &mut Option<Vec<Seg>>) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("empty key segment".into());
    }
    let mut item = root;
    for (n, part) in parts.iter().enumerate() {
        let last = n + 1 == parts.len();
        item = match item {
            Item::ArrayOfTables(arr) => {
                let idx = element(arr.iter().map(|t| t.get("id").and_then(|v| v.as_str())), part, arr.len())?;
                let t = arr.get_mut(idx).unwrap();
                path.push(Seg::Index(idx));
                if last {
                    return Err("cannot replace a whole [[table]] entry".into());
                }
                // Continue inside the table.
                let next = parts[n + 1..].join(".");
                return set_in_table(t, &next, value, path, created);
            }
            Item::Value(Value::Array(arr)) => {
                let len = arr.len();
                let idx = element(arr.iter().map(|v| v.as_inline_table().and_then(|t| t.get("id")).and_then(|v| v.as_str())), part, len)?;
                path.push(Seg::Index(idx));
                if last {
                    arr.replace(idx, value);
                    return Ok(());
                }
                return Err(format!("cannot descend into array element {idx}"));
            }
            Item::Table(_) | Item::Value(Value::InlineTable(_)) | Item::None => {
                let t = item.as_table_like_mut().ok_or_else(|| format!("\"{part}\" is not a table"))?;
                path.push(Seg::Key((*part).to_string()));
                if last {
                    t.insert(part, Item::Value(value));
                    return Ok(());
                }
                if t.get(part).is_none() {
                    t.insert(part, Item::Value(Value::InlineTable(Default::default())));
                    created.get_or_insert_with(|| path.clone());
                }
                t.get_mut(part).unwrap()
            }
            _ => return Err(format!("\"{part}\": the key before it is not a table")),
        };
    }
    Ok(())
}

fn set_in_table(t: &mut toml_edit::Table, key: &str, value: Value, path: &mut Vec<Seg>, created: &mut Option<Vec<Seg>>) -> Result<(), String> {
    let mut item = Item::Table(std::mem::take(t));
    let r = set(&mut item, key, value, path, created);
    if let Item::Table(back) = item {
        *t = back;
    }
    r
}

/// Resolve an array element by index or by `id`.
fn element<'a>(ids: impl Iterator<Item = Option<&'a str>>, part: &str, len: usize) -> Result<usize, String> {
    if let Ok(i) = part.parse::<usize>() {
        return if i < len { Ok(i) } else { Err(format!("index {i} out of range (there are {len})")) };
    }
    let ids: Vec<Option<&str>> = ids.collect();
    ids.iter().position(|id| *id == Some(part)).ok_or_else(|| {
        format!("no element with id \"{part}\" (ids: {})", super::error::some_of(ids.iter().flatten().map(|s| s.to_string())))
    })
}
