//! docs/architecture.md describes the code as it is: every file or folder it names exists, and every
//! layer (top-level folder of `src/`) is in it. A path is read relative to the repository when it
//! starts with one of its top-level folders (`src/...`, `tests/...`), else relative to the folder of
//! the bullet it is in (`- **`src/cluster/`**`, then `  - `store/`:` within it), else to `src/`.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

const DOC: &str = "docs/architecture.md";
/// Top-level folders of the repository a path may start with.
const ROOTS: [&str; 9] = [
    "src/",
    "tests/",
    "testkit/",
    "benches/",
    "docs/",
    "charts/",
    "scripts/",
    "examples/",
    "policies/",
];

/// The text between backticks on a line.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// A code span that names a file or folder: no spaces or punctuation beyond a path's, and either a
/// Rust file, a folder (`/` at the end) or a path from a top-level folder.
fn as_path(span: &str) -> Option<&str> {
    let path_like = !span.is_empty()
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    let names_one = span.ends_with(".rs")
        || span.ends_with(".md")
        || span.ends_with('/')
        || ROOTS.iter().any(|root| span.starts_with(root));
    (path_like && names_one && span.contains(['/', '.'])).then_some(span)
}

/// Every path the page names, with the folders (innermost first) it may be relative to.
fn named_paths(doc: &str) -> Vec<(String, Vec<String>)> {
    let mut named = Vec::new();
    let mut layers: Vec<String> = Vec::new();
    let mut sub: Vec<String> = Vec::new();
    let mut in_tree = false;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_tree = !in_tree;
            continue;
        }
        if in_tree {
            // The layer tree: `cluster/     what tidal knows ...`.
            if let Some(folder) = line.split_whitespace().next().filter(|w| w.ends_with('/')) {
                named.push((format!("src/{folder}"), Vec::new()));
            }
            continue;
        }
        let spans = code_spans(line);
        if line.starts_with("- ") {
            layers = spans
                .iter()
                .filter(|s| s.starts_with("src/") && s.ends_with('/'))
                .map(|s| (*s).to_owned())
                .collect();
            sub.clear();
        } else if line.starts_with("  - ") {
            sub = spans
                .first()
                .filter(|s| s.ends_with('/') && !s.starts_with("src/"))
                .map(|folder| layers.iter().map(|l| format!("{l}{folder}")).collect())
                .unwrap_or_default();
        } else if !line.starts_with(' ') {
            layers.clear();
            sub.clear();
        }
        let contexts: Vec<String> = sub.iter().chain(&layers).cloned().collect();
        for path in spans.into_iter().filter_map(as_path) {
            named.push((path.to_owned(), contexts.clone()));
        }
    }
    named
}

fn exists(repo: &Path, path: &str, contexts: &[String]) -> bool {
    let candidates: Vec<PathBuf> = if ROOTS.iter().any(|root| path.starts_with(root)) {
        vec![repo.join(path)]
    } else {
        contexts
            .iter()
            .map(|context| repo.join(context).join(path))
            .chain([repo.join("src").join(path)])
            .collect()
    };
    candidates.iter().any(|candidate| candidate.exists())
}

#[test]
fn every_path_the_architecture_page_names_exists() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(repo.join(DOC)).expect("docs/architecture.md");
    let named = named_paths(&doc);
    let missing: Vec<String> = named
        .iter()
        .filter(|(path, contexts)| !exists(repo, path, contexts))
        .map(|(path, contexts)| format!("`{path}` (looked in the repository, {contexts:?}, src/)"))
        .collect();
    assert!(
        missing.is_empty(),
        "{DOC} names paths that do not exist:\n{}",
        missing.join("\n")
    );
    // Not vacuous: the page names the files of each layer, and this reads them.
    assert!(named.len() > 50, "the page names its files: {named:?}");
}

#[test]
fn every_layer_is_on_the_architecture_page() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(repo.join(DOC)).expect("docs/architecture.md");
    let named: BTreeSet<String> = named_paths(&doc).into_iter().map(|(p, _)| p).collect();
    let unnamed: Vec<String> = fs::read_dir(repo.join("src"))
        .expect("src/")
        .map(|entry| entry.expect("readable src/").path())
        .filter(|path| path.is_dir())
        .map(|path| format!("src/{}/", path.file_name().unwrap().to_string_lossy()))
        .filter(|layer| !named.contains(layer))
        .collect();
    assert!(
        unnamed.is_empty(),
        "{DOC} does not describe these layers: {unnamed:?}"
    );
}

#[test]
fn paths_resolve_against_their_bullet() {
    let doc = "intro `src/a.rs`\n- **`src/cluster/`** has\n  - `store/`: the cache (`cache/mod.rs`) \
               and `dump/stream.rs`;\n  text `pile.rs`\nNext `x.rs` and `kubectl get -o yaml`\n";
    let named = named_paths(doc);
    let contexts = |path: &str| {
        named
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, c)| c.clone())
            .unwrap_or_else(|| panic!("{path} not read: {named:?}"))
    };
    assert_eq!(contexts("src/a.rs"), Vec::<String>::new());
    assert_eq!(
        contexts("cache/mod.rs"),
        ["src/cluster/store/", "src/cluster/"]
    );
    assert_eq!(contexts("pile.rs"), ["src/cluster/store/", "src/cluster/"]);
    assert_eq!(contexts("x.rs"), Vec::<String>::new(), "a paragraph resets");
    assert!(named.iter().all(|(p, _)| !p.contains(' ')));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(exists(repo, "cache/mod.rs", &contexts("cache/mod.rs")));
    assert!(exists(repo, "dump/stream.rs", &contexts("dump/stream.rs")));
    assert!(!exists(repo, "framework/fit.rs", &[]));
}
