//! docs/architecture.md describes the code as it is: every file or folder it names exists, and every
//! layer (top-level folder of `src/`) is in it. A path is read relative to the repository when it
//! starts with one of its top-level folders (`src/...`, `tests/...`), else relative to the folder of
//! the bullet it is in (`- **`src/cluster/`**`, then `  - `store/`:` within it), else to `src/`.
//! CONTRIBUTING.md, the architecture page, the strategy table and the registry say in the same words
//! what a new strategy touches, and it is so: each strategy of the table is one folder with its
//! plugin, arguments and tests.

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

/// Where the rule for a new strategy is written: each says it in the same words.
const SAY_WHAT_A_NEW_STRATEGY_TOUCHES: [&str; 4] = [
    "CONTRIBUTING.md",
    DOC,
    "src/strategies/mod.rs",
    "src/planner/registry.rs",
];

/// The sentence of `text` that starts with `start`, as one line: comment markers, list markers and
/// line breaks removed. A sentence ends at a full stop followed by a space or the end of the text.
fn sentence_from(text: &str, start: &str) -> Option<String> {
    let flat: Vec<&str> = text
        .lines()
        .map(|line| {
            let line = line.trim_start();
            let line = ["//!", "///", "//", "- "]
                .iter()
                .find_map(|marker| line.strip_prefix(marker))
                .unwrap_or(line);
            line.trim()
        })
        .collect();
    let flat = flat.join(" ");
    let from = &flat[flat.find(start)?..];
    let end = from
        .match_indices('.')
        .map(|(at, _)| at)
        .find(|at| from[at + 1..].is_empty() || from[at + 1..].starts_with(' '))?;
    Some(
        from[..=end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// A strategy's key in a policy as the name of its folder: `removeFailedPods` is
/// `remove_failed_pods`.
fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn the_docs_and_the_table_say_the_same_of_a_new_strategy() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let said: Vec<(&str, Option<String>)> = SAY_WHAT_A_NEW_STRATEGY_TOUCHES
        .iter()
        .map(|file| {
            let text = fs::read_to_string(repo.join(file)).expect(file);
            (
                *file,
                sentence_from(&text, "A new strategy is registered in"),
            )
        })
        .collect();
    let first = said[0]
        .1
        .clone()
        .expect("CONTRIBUTING.md says what a new strategy touches");
    for (file, sentence) in &said {
        assert_eq!(
            sentence.as_deref(),
            Some(first.as_str()),
            "{file} says otherwise than CONTRIBUTING.md of what a new strategy touches"
        );
    }
    // What it says is so: one folder per strategy with the plugin, its arguments and its tests, and its
    // `mod` line in src/strategies/mod.rs (its row there is what `StrategyId::ALL` is made of).
    assert!(first.contains("`src/strategies/<id>/`") && first.contains("`src/strategies/mod.rs`"));
    let table = fs::read_to_string(repo.join("src/strategies/mod.rs")).expect("the strategy table");
    let mut folders = BTreeSet::new();
    for id in tidal::framework::StrategyId::ALL {
        let folder = snake_case(id.name());
        for file in ["mod.rs", "args.rs", "tests.rs"] {
            let path = repo.join("src/strategies").join(&folder).join(file);
            assert!(path.exists(), "{id} has no {}", path.display());
        }
        assert!(
            table.contains(&format!("pub mod {folder};")),
            "{id}: no `mod` line"
        );
        folders.insert(folder);
    }
    // Every other folder there is a helper the architecture page describes, not a strategy left out
    // of the table.
    let doc = fs::read_to_string(repo.join(DOC)).expect(DOC);
    for entry in fs::read_dir(repo.join("src/strategies")).expect("src/strategies/") {
        let path = entry.expect("readable src/strategies/").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && !folders.contains(&name) {
            assert!(
                doc.contains(&format!("`{name}/`")),
                "src/strategies/{name}/ is no strategy of the table, and {DOC} does not describe it"
            );
        }
    }
}

#[test]
fn a_sentence_is_read_across_lines_and_comment_markers() {
    let text = "//! Intro. A new strategy is registered in two places: its folder\n//! `src/a/` (`mod.rs`) and\n//! the table. After.";
    assert_eq!(
        sentence_from(text, "A new strategy").as_deref(),
        Some(
            "A new strategy is registered in two places: its folder `src/a/` (`mod.rs`) and the table."
        )
    );
    let text = "- A new strategy is here.\n  Next";
    assert_eq!(
        sentence_from(text, "A new strategy").as_deref(),
        Some("A new strategy is here.")
    );
    assert_eq!(
        snake_case("removePodsViolatingNodeTaints"),
        "remove_pods_violating_node_taints"
    );
    assert_eq!(snake_case("tdm"), "tdm");
}
