//! Scenario errors that say where: `file:line:col: key.path: problem`.
//! Every problem found is reported, not just the first.

use std::fmt;

/// One problem in a scenario, located by key path and, where the key exists
/// in the text, by line and column (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub line: Option<usize>,
    pub col: Option<usize>,
    pub key: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.col {
                write!(f, ":{c}")?;
            }
        }
        if self.key.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.key, self.message)
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub problems: Vec<Problem>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// A key path segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// `links[1].rate` style rendering of a key path.
pub fn render_path(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Names for a message ("links are: ..."): the first twelve, then how
/// many there are, so a message stays a line however large the scenario.
pub fn some_of<I: IntoIterator<Item = String>>(names: I) -> String {
    let mut it = names.into_iter();
    let mut out: Vec<String> = it.by_ref().take(12).collect();
    let rest = it.count();
    if rest > 0 {
        out.push(format!("... ({} in all)", out.len() + rest));
    }
    out.join(", ")
}

/// Line and column (1-based) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
    (line, col)
}

/// A scenario's text as problems are located in it: parsed once, on the
/// first problem, with an index of its lines, so that the thousands of
/// problems of a large generated file cost one parse and a binary search
/// each (instead of a parse and a scan each).
pub struct Source<'a> {
    pub text: &'a str,
    pub file: &'a str,
    doc: std::cell::OnceCell<Option<toml_edit::Document<String>>>,
    /// Byte offset of each line's start.
    lines: std::cell::OnceCell<Vec<usize>>,
}

impl<'a> Source<'a> {
    pub fn new(text: &'a str, file: &'a str) -> Source<'a> {
        Source { text, file, doc: Default::default(), lines: Default::default() }
    }

    /// Line and column (1-based) of a byte offset, as [`line_col`].
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let lines = self.lines.get_or_init(|| std::iter::once(0).chain(self.text.match_indices('\n').map(|(i, _)| i + 1)).collect());
        let offset = offset.min(self.text.len());
        let line = lines.partition_point(|&start| start <= offset);
        (line, offset - lines[line - 1] + 1)
    }

    /// A problem at `path`, located at its key (or the deepest part of the
    /// path the text has).
    pub fn problem(&self, path: &[Seg], message: String) -> Problem {
        let doc = self.doc.get_or_init(|| toml_edit::Document::parse(self.text.to_string()).ok());
        let (line, col) =
            doc.as_ref().and_then(|d| locate(d, path)).map(|sp| self.line_col(sp.start)).map_or((None, None), |(l, c)| (Some(l), Some(c)));
        Problem { file: self.file.to_string(), line, col, key: render_path(path), message }
    }
}

/// A node of a parsed TOML document while walking a key path.
#[derive(Copy, Clone)]
enum Node<'a> {
    Item(&'a toml_edit::Item),
    Value(&'a toml_edit::Value),
    Table(&'a toml_edit::Table),
}

impl<'a> Node<'a> {
    fn span(self) -> Option<std::ops::Range<usize>> {
        match self {
            Node::Item(i) => i.span(),
            Node::Value(v) => v.span(),
            Node::Table(t) => t.span(),
        }
    }
    /// The child at `seg`, with the span of its key if it has one.
    fn child(self, seg: &Seg) -> Option<(Node<'a>, Option<std::ops::Range<usize>>)> {
        use toml_edit::{Item, Value};
        let table = |t: &'a toml_edit::Table, k: &str| t.get_key_value(k).map(|(key, it)| (Node::Item(it), key.span()));
        let value = |v: &'a Value| match (v, seg) {
            (Value::InlineTable(t), Seg::Key(k)) => t.get_key_value(k).map(|(key, it)| (Node::Item(it), key.span())),
            (Value::Array(a), Seg::Index(i)) => a.get(*i).map(|v| (Node::Value(v), v.span())),
            _ => None,
        };
        match (self, seg) {
            (Node::Table(t), Seg::Key(k)) | (Node::Item(Item::Table(t)), Seg::Key(k)) => table(t, k),
            (Node::Item(Item::ArrayOfTables(a)), Seg::Index(i)) => a.get(*i).map(|t| (Node::Table(t), t.span())),
            (Node::Item(Item::Value(v)), _) | (Node::Value(v), _) => value(v),
            _ => None,
        }
    }
}

/// The span of the value (or table) at `path` in a parsed document, or of
/// the deepest part of the path that exists.
pub fn locate(doc: &toml_edit::Document<String>, path: &[Seg]) -> Option<std::ops::Range<usize>> {
    let mut node = Node::Item(doc.as_item());
    let mut best = None;
    for seg in path {
        let Some((next, key_span)) = node.child(seg) else { return best };
        best = key_span.or_else(|| next.span()).or(best);
        node = next;
    }
    node.span().or(best)
}
