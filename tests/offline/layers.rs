//! The folder tree is the architecture (docs/architecture.md): each layer imports only the layers above
//! it, plugins never import each other, and no two files use each other, directly or around a ring.
//! This reads `src/` and fails on an import that breaks a rule, so a new circle cannot creep back in
//! unnoticed. Test-only code (items under `#[cfg(test)]`, wherever they are in a file, and files named
//! `tests.rs` or `testkit.rs`) may reach anywhere.
//!
//! Two paths into `src/strategies/` are not the strategies' code. A strategy's arguments
//! (`src/strategies/<id>/args.rs`) are API types kept in the strategy's folder: they are in the `api`
//! layer, import only what `api` may, and whoever may import `api` may import them. The strategy table
//! (`crate::strategies::strategy_table`) is a macro of names that every layer listing the strategies
//! expands with a macro of its own; it runs no strategy code, so any layer may read it.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::Path,
};

/// Top-level modules, and which others each may import (besides itself).
fn allowed() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let base = ["api", "time_windows"];
    let core = ["api", "time_windows", "cluster", "framework"];
    let rows: [(&str, &[&str]); 16] = [
        ("api", &["time_windows"]),
        ("time_windows", &[]),
        ("text", &["time_windows"]),
        ("cluster", &base),
        ("framework", &["api", "time_windows", "cluster"]),
        ("strategies", &core),
        ("gates", &core),
        (
            "planner",
            &[
                "api",
                "time_windows",
                "cluster",
                "framework",
                "strategies",
                "gates",
            ],
        ),
        (
            "drain",
            &["api", "time_windows", "cluster", "framework", "planner"],
        ),
        (
            "report",
            &[
                "api",
                "time_windows",
                "text",
                "cluster",
                "framework",
                "planner",
                "drain",
            ],
        ),
        (
            "timeline",
            &[
                "api",
                "time_windows",
                "text",
                "cluster",
                "framework",
                "planner",
                "drain",
                "report",
            ],
        ),
        ("runtime", &["api", "time_windows", "cluster"]),
        (
            "controller",
            &[
                "api",
                "time_windows",
                "cluster",
                "framework",
                "planner",
                "drain",
                "runtime",
            ],
        ),
        ("webhook", &["api", "time_windows", "cluster", "runtime"]),
        (
            "cli",
            &[
                "api",
                "time_windows",
                "text",
                "cluster",
                "framework",
                "planner",
                "drain",
                "report",
                "timeline",
                "runtime",
                "controller",
                "webhook",
            ],
        ),
        ("lib", &[]),
    ];
    rows.into_iter()
        .map(|(module, may)| (module, may.iter().copied().collect()))
        .collect()
}

/// The file's code without comments, literals and test-only items (`#[cfg(test)]` modules, functions,
/// imports, wherever they are in the file), written back as text: paths keep their `::`.
fn production_code(text: &str) -> String {
    let (kept, _) = without_test_items(tokens(text));
    let mut code = String::new();
    for (at, token) in kept.iter().enumerate() {
        let glued = at > 0 && (kept[at - 1] == Token::PathSep || *token == Token::PathSep);
        if at > 0 && !glued {
            code.push(' ');
        }
        match token {
            Token::Ident(word) => code.push_str(word),
            Token::PathSep => code.push_str("::"),
            Token::Punct(c) => code.push(*c),
        }
    }
    code
}

/// Top-level modules named as `crate::<module>` or inside a `use crate::{...}` group.
fn imported_modules(code: &str, known: &BTreeSet<&str>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Names at the group's top level: depth 0 of the braces.
            let mut depth = 0;
            let mut word = String::new();
            let mut at_start = true;
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_start = true,
                    c if c.is_alphanumeric() || c == '_' => {
                        if depth == 0 && at_start {
                            word.push(c);
                        }
                    }
                    _ => {
                        if !word.is_empty() {
                            found.insert(std::mem::take(&mut word));
                            at_start = false;
                        }
                    }
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.insert(name);
        }
    }
    found.retain(|m| known.contains(m.as_str()));
    found
}

fn top_module(path: &Path, src: &Path) -> String {
    let relative = path.strip_prefix(src).expect("under src");
    if is_arguments_file(relative) {
        return "api".to_owned();
    }
    let first = relative.components().next().expect("a component");
    let name = first.as_os_str().to_string_lossy().into_owned();
    name.trim_end_matches(".rs").to_owned()
}

/// `strategies/<folder>/args.rs`: a strategy's arguments, in the `api` layer.
fn is_arguments_file(relative: &Path) -> bool {
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.len() == 3 && parts[0] == "strategies" && parts[2] == "args.rs"
}

/// `code` with the paths into `strategies` that are not the strategies' code written as what they
/// are: `strategies::<folder>::args` (also as a macro's `strategies::$folder::args`) as
/// `api::<folder>::args`, and the strategy table as a name of no layer.
fn as_layers(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("strategies::") {
        let before_is_ident = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        let after = &rest[at + "strategies::".len()..];
        if before_is_ident {
            out.push_str("strategies::");
            rest = after;
            continue;
        }
        let folder = after.strip_prefix("$ ").unwrap_or(after);
        let name_len = folder
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(folder.len());
        if folder[..name_len] == *"strategy_table" {
            out.push_str("STRATEGY_TABLE");
            rest = &folder[name_len..];
        } else if name_len > 0 && folder[name_len..].starts_with("::args") {
            out.push_str("api::");
            out.push_str(&folder[..name_len]);
            rest = &folder[name_len..];
        } else {
            out.push_str("strategies::");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_import_goes_up_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed = allowed();
    let known: BTreeSet<&str> = allowed.keys().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name == "testkit.rs" || name == "main.rs" {
            continue;
        }
        let module = top_module(&path, &src);
        let Some(may) = allowed.get(module.as_str()) else {
            wrong.push(format!(
                "{}: module `{module}` is in no layer",
                path.display()
            ));
            continue;
        };
        let code = as_layers(&production_code(
            &fs::read_to_string(&path).expect("readable file"),
        ));
        for import in imported_modules(&code, &known) {
            if import != module && !may.contains(import.as_str()) {
                wrong.push(format!("{} imports `{import}`", path.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

/// Modules of a plugin layer that plugins may share: helpers, not plugins.
const PLUGIN_HELPERS: [&str; 8] = [
    "selection",
    "victim_order",
    "node_fit",
    "pod_age",
    "exit_codes",
    "node_usage",
    "job_ledger",
    "shared_limits",
];

/// Names at the top level of a `{...}` group that starts at `group` (just past its `{`).
fn group_names(group: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0;
    let mut word = String::new();
    let mut at_start = true;
    for ch in group.chars() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_start = true,
            c if c.is_alphanumeric() || c == '_' => {
                if depth == 0 && at_start {
                    word.push(c);
                }
            }
            _ => {
                if !word.is_empty() {
                    names.push(std::mem::take(&mut word));
                    at_start = false;
                }
            }
        }
    }
    names
}

/// The plugins (strategies or gates) other than its own that a plugin file's code names: through
/// `super::`, `super::super::` or `crate::<layer>::`, plainly or in a group. `own` is the file's module
/// path inside the layer (`["tdm"]`, `["low_node_utilization", "args"]`).
fn plugins_named(code: &str, layer: &str, own: &[String]) -> BTreeSet<String> {
    let parent = &own[..own.len() - 1];
    let mut named = BTreeSet::new();
    let absolute = format!("crate::{layer}::");
    let prefixes: [(String, &[String]); 3] = [
        (
            "super::super::".to_owned(),
            &parent[..parent.len().saturating_sub(1)],
        ),
        ("super::".to_owned(), parent),
        (absolute, &[]),
    ];
    let mut rest = code;
    while let Some(at) = rest
        .find("super::")
        .into_iter()
        .chain(rest.find("crate::"))
        .min()
    {
        let here = &rest[at..];
        let Some((prefix, base)) = prefixes.iter().find(|(p, _)| here.starts_with(p.as_str()))
        else {
            rest = &here["crate::".len()..];
            continue;
        };
        let after = &here[prefix.len()..];
        let names = match after.strip_prefix('{') {
            Some(group) => group_names(group),
            None => vec![
                after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            ],
        };
        for name in names {
            if name.is_empty() || name == "*" || name.chars().next().is_some_and(char::is_uppercase)
            {
                continue;
            }
            let mut target: Vec<String> = base.to_vec();
            target.push(name);
            // A plugin is a top-level file or folder of its layer: all in it is its own.
            let own_line = target.first() == own.first();
            let helper = target
                .iter()
                .any(|part| PLUGIN_HELPERS.contains(&part.as_str()));
            if !own_line && !helper {
                named.insert(target.join("::"));
            }
        }
        rest = &here[prefix.len()..];
    }
    named
}

#[test]
fn plugins_import_helpers_never_other_plugins() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for layer in ["strategies", "gates"] {
        let mut files = Vec::new();
        rust_files(&src.join(layer), &mut files);
        for path in files {
            let relative = path.strip_prefix(src.join(layer)).expect("under the layer");
            let own = module_path(relative);
            if own.is_empty() || PLUGIN_HELPERS.contains(&own[0].as_str()) {
                continue;
            }
            let code = production_code(&fs::read_to_string(&path).expect("readable file"));
            for other in plugins_named(&code, layer, &own) {
                wrong.push(format!("{} imports plugin `{other}`", path.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "plugins importing other plugins (share through a helper module instead):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_plugin_wall_sees_siblings_helpers_and_families() {
    let own = |path: &[&str]| path.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
    let named = |code: &str, path: &[&str]| {
        plugins_named(code, "strategies", &own(path))
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        named(
            "use super::{selection::Selection, pod_life_time::has_exit_code};",
            &["remove_failed_pods"]
        ),
        ["pod_life_time"]
    );
    assert_eq!(
        named("use super::selection::{movable, Selection};", &["tdm"]),
        Vec::<String>::new()
    );
    assert_eq!(
        named(
            "use args::X;\nuse crate::strategies::node_usage::args::Y;\nuse super::super::tdm::args::Z;",
            &["high_node_utilization", "args"]
        ),
        ["tdm"]
    );
    assert_eq!(
        named(
            "use super::args::X;\nuse crate::strategies::victim_order::Y;",
            &["low_node_utilization", "tests"]
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        named("use crate::strategies::tdm::Tdm;", &["remove_duplicates"]),
        ["tdm"]
    );
}

#[test]
fn arguments_and_the_strategy_table_are_read_as_what_they_are() {
    let known: BTreeSet<&str> = ["api", "strategies", "cluster"].into_iter().collect();
    let layers = |code: &str| -> Vec<String> {
        imported_modules(&as_layers(code), &known)
            .into_iter()
            .collect()
    };
    assert_eq!(
        layers("use crate::strategies::tdm::args::TdmArgs;"),
        ["api"]
    );
    assert_eq!(
        layers("use crate::{cluster::X, strategies::pod_life_time::args::{A, B}};"),
        ["api", "cluster"]
    );
    assert_eq!(
        layers("pub f: Option<crate::strategies::$ field::args::$ args>,"),
        ["api"]
    );
    assert_eq!(
        layers("crate::strategies::strategy_table!(ids);"),
        Vec::<String>::new()
    );
    assert_eq!(layers("use crate::strategies::tdm::Tdm;"), ["strategies"]);
    assert_eq!(
        layers("use crate::strategies::{selection::S, tdm::args::A};"),
        ["strategies"]
    );
    assert!(is_arguments_file(Path::new("strategies/tdm/args.rs")));
    assert!(!is_arguments_file(Path::new("strategies/tdm/mod.rs")));
    assert!(!is_arguments_file(Path::new("api/args.rs")));
}

#[test]
fn the_checker_sees_grouped_and_plain_imports() {
    let known: BTreeSet<&str> = ["api", "planner", "cluster"].into_iter().collect();
    let code = "use crate::{\n    api::{self, X},\n    cluster::Y,\n};\nfn f() { crate::planner::plan(); }";
    let found: Vec<String> = imported_modules(code, &known).into_iter().collect();
    assert_eq!(found, ["api", "cluster", "planner"]);
    let commented =
        production_code("// crate::planner\nuse crate::api;\n#[cfg(test)]\nuse crate::cluster;");
    assert_eq!(
        imported_modules(&commented, &known)
            .into_iter()
            .collect::<Vec<_>>(),
        ["api"]
    );
}

// ---- circles between files ------------------------------------------------------------------------

/// A token of Rust source, as far as imports are concerned: comments, literals and lifetimes are
/// dropped, `::` is one token.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The tokens of `text`.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // Skips a quoted string starting at `i` (at its `"`), escapes included.
    let skip_string = |mut i: usize| -> usize {
        i += 1;
        while i < chars.len() && chars[i] != '"' {
            i += if chars[i] == '\\' { 2 } else { 1 };
        }
        i + 1
    };
    // Skips a raw string starting at `i` (at its first `#` or `"`).
    let skip_raw = |mut i: usize| -> usize {
        let mut hashes = 0;
        while i < chars.len() && chars[i] == '#' {
            hashes += 1;
            i += 1;
        }
        i += 1;
        while i < chars.len() {
            if chars[i] == '"'
                && chars[i + 1..]
                    .iter()
                    .take(hashes)
                    .filter(|c| **c == '#')
                    .count()
                    == hashes
            {
                return i + 1 + hashes;
            }
            i += 1;
        }
        i
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(i);
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a), which is dropped.
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (is_ident_char(chars[i])
                    || (chars[i] == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
        } else if is_ident_char(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let after = chars.get(i).copied();
            match (word.as_str(), after) {
                ("r" | "br" | "cr", Some('"' | '#')) => i = skip_raw(i),
                ("b" | "c", Some('"')) => i = skip_string(i),
                ("b", Some('\'')) => {
                    i += 1;
                    while i < chars.len() && chars[i] != '\'' {
                        i += if chars[i] == '\\' { 2 } else { 1 };
                    }
                    i += 1;
                }
                _ => out.push(Token::Ident(word)),
            }
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

fn is_ident(token: Option<&Token>, word: &str) -> bool {
    matches!(token, Some(Token::Ident(w)) if w == word)
}

/// Where the item starting at `from` ends (just past it): its `;`, or the `}` closing its body.
fn item_end(tokens: &[Token], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(')' | ']') => depth = depth.saturating_sub(1),
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let past = i + 1;
                    return if tokens.get(past) == Some(&Token::Punct(';')) {
                        past + 1
                    } else {
                        past
                    };
                }
            }
            Token::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Where the attribute starting at `at` (its `#`) ends, and whether it is `#[cfg(test)]`.
fn attribute(tokens: &[Token], at: usize) -> Option<(usize, bool)> {
    if tokens.get(at) != Some(&Token::Punct('#')) {
        return None;
    }
    let open = if tokens.get(at + 1) == Some(&Token::Punct('!')) {
        at + 2
    } else {
        at + 1
    };
    if tokens.get(open) != Some(&Token::Punct('[')) {
        return None;
    }
    let mut depth = 0usize;
    let mut end = open;
    while end < tokens.len() {
        match tokens[end] {
            Token::Punct('[') => depth += 1,
            Token::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        end += 1;
    }
    let end = (end + 1).min(tokens.len());
    let test = tokens[open..end]
        == [
            Token::Punct('['),
            Token::Ident("cfg".into()),
            Token::Punct('('),
            Token::Ident("test".into()),
            Token::Punct(')'),
            Token::Punct(']'),
        ];
    Some((end, test))
}

/// The tokens of a file without its test-only items (`#[cfg(test)]` on a module, a function, a `use`
/// or an `impl`, wherever in the file), and the names of the test-only modules it declares.
fn without_test_items(tokens: Vec<Token>) -> (Vec<Token>, Vec<String>) {
    let mut kept = Vec::with_capacity(tokens.len());
    let mut test_modules = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match attribute(&tokens, i) {
            Some((end, true)) => {
                let mut item = end;
                while let Some((next, _)) = attribute(&tokens, item) {
                    item = next;
                }
                let mut at = item;
                while matches!(tokens.get(at), Some(Token::Ident(w)) if w == "pub")
                    || tokens.get(at) == Some(&Token::Punct('('))
                {
                    at = if tokens[at] == Token::Punct('(') {
                        item_end(&tokens, at)
                    } else {
                        at + 1
                    };
                }
                if is_ident(tokens.get(at), "mod")
                    && let Some(Token::Ident(name)) = tokens.get(at + 1)
                {
                    test_modules.push(name.clone());
                }
                i = item_end(&tokens, item);
            }
            _ => {
                kept.push(tokens[i].clone());
                i += 1;
            }
        }
    }
    (kept, test_modules)
}

/// One name a `use` brings into scope: what it names (`None`: another crate), under which name, and
/// whether it is re-exported.
#[derive(Clone, Debug)]
struct UseItem {
    path: Vec<String>,
    alias: String,
    glob: bool,
    public: bool,
}

/// Parses the use tree at `i` under `prefix`, pushing what it imports; returns where it ends.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    prefix: Vec<String>,
    public: bool,
    out: &mut Vec<UseItem>,
) -> usize {
    let mut path = prefix;
    loop {
        match tokens.get(i) {
            Some(Token::Punct('{')) => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Token::Punct('}')) => return i + 1,
                        Some(Token::Punct(',')) => i += 1,
                        None => return i,
                        _ => i = use_tree(tokens, i, path.clone(), public, out),
                    }
                }
            }
            Some(Token::Punct('*')) => {
                out.push(UseItem {
                    path,
                    alias: String::new(),
                    glob: true,
                    public,
                });
                return i + 1;
            }
            Some(Token::Ident(word)) => {
                i += 1;
                if word == "self" && !path.is_empty() && tokens.get(i) != Some(&Token::PathSep) {
                    let mut alias = path.last().cloned().unwrap_or_default();
                    if is_ident(tokens.get(i), "as")
                        && let Some(Token::Ident(renamed)) = tokens.get(i + 1)
                    {
                        alias.clone_from(renamed);
                        i += 2;
                    }
                    out.push(UseItem {
                        path,
                        alias,
                        glob: false,
                        public,
                    });
                    return i;
                }
                path.push(word.clone());
                match tokens.get(i) {
                    Some(Token::PathSep) => i += 1,
                    _ => {
                        let alias = if is_ident(tokens.get(i), "as") {
                            i += 2;
                            match tokens.get(i - 1) {
                                Some(Token::Ident(alias)) => alias.clone(),
                                _ => "_".to_owned(),
                            }
                        } else {
                            word.clone()
                        };
                        out.push(UseItem {
                            path,
                            alias,
                            glob: false,
                            public,
                        });
                        return i;
                    }
                }
            }
            // `::std::...`: another crate.
            Some(Token::PathSep) => i += 1,
            _ => return i + 1,
        }
    }
}

/// What one file of `src/` holds and names, with its tokens outside `use` declarations.
#[derive(Debug, Default)]
struct FileItems {
    /// Items defined at the file's top level (types, functions, constants, modules, macros).
    defined: BTreeSet<String>,
    uses: Vec<UseItem>,
    /// Tokens outside `use` declarations.
    code: Vec<Token>,
}

fn file_items(tokens: &[Token]) -> FileItems {
    const DEFINING: [&str; 10] = [
        "fn",
        "struct",
        "enum",
        "trait",
        "type",
        "const",
        "static",
        "union",
        "mod",
        "macro_rules",
    ];
    let mut items = FileItems::default();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Ident(word) if word == "use" => {
                let before = |back: usize| i.checked_sub(back).and_then(|at| tokens.get(at));
                let public = is_ident(before(1), "pub")
                    || (before(1) == Some(&Token::Punct(')'))
                        && (2..12).any(|back| {
                            before(back) == Some(&Token::Punct('('))
                                && is_ident(before(back + 1), "pub")
                        }));
                let mut used = Vec::new();
                let end = use_tree(tokens, i + 1, Vec::new(), public && depth == 0, &mut used);
                items.uses.extend(used);
                i = end;
                continue;
            }
            Token::Ident(word) if depth == 0 && DEFINING.contains(&word.as_str()) => {
                let mut at = i + 1;
                if tokens.get(at) == Some(&Token::Punct('!')) {
                    at += 1;
                }
                match tokens.get(at) {
                    // `const fn`, `const _`, `unsafe fn`: the name follows the next keyword.
                    Some(Token::Ident(name))
                        if !DEFINING.contains(&name.as_str())
                            && name != "unsafe"
                            && name != "async" =>
                    {
                        items.defined.insert(name.clone());
                    }
                    _ => {}
                }
            }
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        items.code.push(tokens[i].clone());
        i += 1;
    }
    items
}

/// The module path of a file of `src/` (`controller/cycle.rs` is `controller::cycle`,
/// `controller/mod.rs` and `lib.rs` name their folder's module).
fn module_path(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> = relative
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    if path
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        path.pop();
    }
    path
}

/// The files of the crate, by module path, and what each uses of the others.
struct FileGraph {
    names: Vec<String>,
    /// Each file's module path, by index.
    paths: Vec<Vec<String>>,
    modules: BTreeMap<Vec<String>, usize>,
    items: Vec<FileItems>,
}

impl FileGraph {
    /// `files`: each file's module path, a name to show and its source text.
    fn new(files: Vec<(Vec<String>, String, String)>) -> FileGraph {
        let mut parsed = Vec::new();
        let mut test_only: Vec<Vec<String>> = Vec::new();
        for (module, name, text) in files {
            let (kept, tests) = without_test_items(tokens(&text));
            test_only.extend(tests.into_iter().map(|t| {
                let mut path = module.clone();
                path.push(t);
                path
            }));
            parsed.push((module, name, kept));
        }
        parsed.retain(|(module, _, _)| !test_only.iter().any(|t| module.starts_with(t)));
        let mut graph = FileGraph {
            names: Vec::new(),
            paths: Vec::new(),
            modules: BTreeMap::new(),
            items: Vec::new(),
        };
        for (module, name, kept) in parsed {
            graph.modules.insert(module.clone(), graph.names.len());
            graph.paths.push(module);
            graph.names.push(name);
            graph.items.push(file_items(&kept));
        }
        graph
    }

    /// A path as written in the module `module`, made absolute; `None` for another crate's.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut base = module.to_vec();
        let mut rest = path;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                // Since the 2018 edition a `use` may start at a name of its own module.
                let mut child = module.to_vec();
                child.push(first.to_owned());
                let own = self.modules.contains_key(&child)
                    || self.modules.get(module).is_some_and(|at| {
                        let items = &self.items[*at];
                        items.defined.contains(first) || items.uses.iter().any(|u| u.alias == first)
                    });
                if !own {
                    return None;
                }
            }
            None => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines what the absolute `path` names (a module names its own file), through
    /// re-exports and imports; `None` when it is not in this crate.
    fn resolve(&self, path: &[String], hops: usize) -> Option<usize> {
        if hops > 32 {
            return None;
        }
        let mut module: Vec<String> = Vec::new();
        for (at, name) in path.iter().enumerate() {
            let mut child = module.clone();
            child.push(name.clone());
            if self.modules.contains_key(&child) {
                module = child;
                continue;
            }
            let file = *self.modules.get(&module)?;
            let items = &self.items[file];
            if items.defined.contains(name) {
                return Some(file);
            }
            let rest = &path[at + 1..];
            if let Some(import) = items.uses.iter().find(|u| !u.glob && u.alias == *name) {
                let mut target = self.absolute(&module, &import.path)?;
                target.extend(rest.iter().cloned());
                return self.resolve(&target, hops + 1);
            }
            return items.uses.iter().filter(|u| u.glob).find_map(|glob| {
                let mut target = self.absolute(&module, &glob.path)?;
                target.extend(path[at..].iter().cloned());
                self.resolve(&target, hops + 1)
            });
        }
        self.modules.get(&module).copied()
    }

    /// What each file uses of the others: (from, to) with the names that make the edge.
    fn edges(&self) -> BTreeMap<(usize, usize), BTreeSet<String>> {
        let mut edges: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
        for (module, &file) in &self.modules {
            let items = &self.items[file];
            let parent = module.split_last().map(|(_, parent)| parent);
            let mut add = |target: Option<usize>, shown: String| {
                let Some(target) = target.filter(|t| *t != file) else {
                    return;
                };
                // A module's own file and the files of its submodules are one module split into
                // files: the parent declares its children and holds what they share, children
                // extend its types; their use of each other is no circle between modules.
                let target_module = &self.paths[target];
                let family = parent == Some(target_module.as_slice())
                    || target_module.split_last().map(|(_, p)| p) == Some(module.as_slice());
                if !family {
                    edges.entry((file, target)).or_default().insert(shown);
                }
            };
            // Paths written in the code: `crate::a::B`, `super::b::C`, or through an imported module.
            let code = &items.code;
            let mut i = 0;
            while i < code.len() {
                let Token::Ident(first) = &code[i] else {
                    i += 1;
                    continue;
                };
                let starts = i == 0 || code[i - 1] != Token::PathSep;
                if !starts || code.get(i + 1) != Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                while code.get(j) == Some(&Token::PathSep) {
                    match code.get(j + 1) {
                        Some(Token::Ident(next)) => path.push(next.clone()),
                        _ => break,
                    }
                    j += 2;
                }
                let absolute = match first.as_str() {
                    "crate" | "super" | "self" => self.absolute(module, &path),
                    _ => items
                        .uses
                        .iter()
                        .find(|u| !u.glob && u.alias == *first)
                        .and_then(|u| self.absolute(module, &u.path))
                        .filter(|target| self.modules.contains_key(target))
                        .map(|mut target| {
                            target.extend(path[1..].iter().cloned());
                            target
                        }),
                };
                if let Some(absolute) = absolute {
                    add(self.resolve(&absolute, 0), path.join("::"));
                }
                i = j;
            }
            // Names imported: each that this file's code reads (a re-export alone is not a use).
            for import in &items.uses {
                let read = !import.public
                    || import.alias == "_"
                    || import.glob
                    || code
                        .iter()
                        .any(|t| matches!(t, Token::Ident(w) if *w == import.alias));
                if !read {
                    continue;
                }
                let Some(absolute) = self.absolute(module, &import.path) else {
                    continue;
                };
                if !import.glob && self.modules.contains_key(&absolute) {
                    // A module imported by name: the paths through it were resolved above, unless
                    // none is written (then the module's own file is what it uses).
                    let through = code.windows(2).any(|w| {
                        matches!(&w[0], Token::Ident(a) if *a == import.alias)
                            && w[1] == Token::PathSep
                    });
                    if through {
                        continue;
                    }
                }
                add(self.resolve(&absolute, 0), import.path.join("::"));
            }
        }
        edges
    }

    /// Every circle of files using each other, one line per circle with what makes each step.
    fn circles(&self) -> Vec<String> {
        let edges = self.edges();
        let mut next: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (from, to) in edges.keys() {
            next.entry(*from).or_default().push(*to);
        }
        // Which files each reaches: a circle stays among files that reach each other.
        let reach: Vec<BTreeSet<usize>> = (0..self.names.len())
            .map(|from| {
                let mut seen = BTreeSet::new();
                let mut todo = vec![from];
                while let Some(node) = todo.pop() {
                    for &to in next.get(&node).map(Vec::as_slice).unwrap_or(&[]) {
                        if seen.insert(to) {
                            todo.push(to);
                        }
                    }
                }
                seen
            })
            .collect();
        // Each elementary circle once, from its smallest file: a depth-first search that only
        // visits files after the start that reach it back.
        let mut found = Vec::new();
        for start in 0..self.names.len() {
            let mut stack = vec![(start, 0usize)];
            let mut on_path = vec![start];
            while let Some((node, child)) = stack.pop() {
                let targets = next.get(&node).map(Vec::as_slice).unwrap_or(&[]);
                let Some(&target) = targets.get(child) else {
                    on_path.pop();
                    continue;
                };
                stack.push((node, child + 1));
                if target == start {
                    found.push(on_path.clone());
                } else if target > start
                    && reach[target].contains(&start)
                    && !on_path.contains(&target)
                    && found.len() < 100
                {
                    on_path.push(target);
                    stack.push((target, 0));
                }
            }
        }
        found
            .into_iter()
            .map(|circle| {
                let steps: Vec<String> = circle
                    .iter()
                    .zip(circle.iter().cycle().skip(1))
                    .map(|(from, to)| {
                        let names: Vec<&str> =
                            edges[&(*from, *to)].iter().map(String::as_str).collect();
                        format!("{} uses {}", self.names[*from], names.join(", "))
                    })
                    .collect();
                let mut files: Vec<&str> = circle.iter().map(|f| self.names[*f].as_str()).collect();
                files.push(files[0]);
                format!("{}\n    {}", files.join(" -> "), steps.join("\n    "))
            })
            .collect()
    }
}

/// A real circle is two files each using an item the other defines (or more files in a ring). A
/// parent module re-exporting its children, and children reaching a sibling through `super::`, is
/// none: `super::X` and re-exports are followed to the file that defines `X`.
#[test]
fn no_file_uses_a_file_that_uses_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files = paths
        .into_iter()
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name != "tests.rs" && name != "testkit.rs" && name != "main.rs"
        })
        .map(|path| {
            let relative = path.strip_prefix(&src).expect("under src");
            let text = fs::read_to_string(&path).expect("readable file");
            (
                module_path(relative),
                format!("src/{}", relative.display()),
                text,
            )
        })
        .collect();
    let circles = FileGraph::new(files).circles();
    assert!(
        circles.is_empty(),
        "files that use each other, in a circle (move what they share to where it belongs):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_finder_follows_re_exports_to_the_defining_file() {
    let graph = |files: &[(&str, &str)]| {
        FileGraph::new(
            files
                .iter()
                .map(|(module, text)| {
                    let path: Vec<String> = module
                        .split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect();
                    (path, (*module).to_owned(), (*text).to_owned())
                })
                .collect(),
        )
    };
    // A parent re-exporting its children, which import each other's items through it and `super::`:
    // no circle, although each child names the parent.
    let tree = graph(&[
        ("", "mod a;"),
        (
            "a",
            "mod b;\nmod c;\npub use b::{B, helper};\npub(crate) use c::C;\nconst LIMIT: u8 = 3;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nuse crate::a::c::Only;",
        ),
        (
            "a::b",
            "use super::{C, LIMIT};\npub struct B;\npub fn helper() { let s = \"crate::a::c\"; }",
        ),
        (
            "a::c",
            "use crate::a::LIMIT;\npub struct C([u8; LIMIT as usize]);\n// use super::B;\n",
        ),
        ("a::tests", "use super::b::helper; use super::c::C;"),
    ]);
    assert_eq!(tree.circles(), Vec::<String>::new());
    // Two siblings each using what the other defines are a circle, however they reach it (here
    // through the parent's re-exports); so is a ring of three through an imported module and a
    // written path. A parent and its own child using each other's items are one module split in
    // two files, not a circle.
    let ring = graph(&[
        ("", "mod x;\nmod y;\nmod z;\nmod p;"),
        ("x", "use crate::y;\npub struct X;\nfn f() { y::Y::new(); }"),
        (
            "y",
            "pub struct Y;\nimpl Y { fn g(z: crate::z::Z) -> crate::z::Z { z } }",
        ),
        ("z", "use super::x::X as Renamed;\npub struct Z(Renamed);"),
        (
            "p",
            "mod q;\nmod r;\npub use q::Q;\npub use r::R;\npub struct P;\nfn uses() -> Q { Q }",
        ),
        ("p::q", "use super::{P, R};\npub struct Q(R);"),
        (
            "p::r",
            "pub struct R;\nimpl R { fn q(&self) -> super::Q { super::Q(R) } }",
        ),
    ]);
    let circles = ring.circles();
    assert_eq!(circles.len(), 2, "{circles:#?}");
    assert!(circles[0].starts_with("x -> y -> z -> x\n"), "{circles:#?}");
    assert!(circles[0].contains("z uses super::x::X"), "{circles:#?}");
    assert!(
        circles[1].starts_with("p::q -> p::r -> p::q\n"),
        "{circles:#?}"
    );
    assert!(circles[1].contains("p::r uses super::Q"), "{circles:#?}");
}
