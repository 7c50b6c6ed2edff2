//! The folder tree is the architecture (docs/architecture.md): each layer imports only the layers above
//! it. This reads `src/` and fails on an import that goes the wrong way, so a new circle cannot creep
//! back in unnoticed. Test modules (`#[cfg(test)]` to the end of a file, and files named `tests.rs` or
//! `testkit.rs`) may reach anywhere.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::Path,
};

/// Top-level modules, and which others each may import (besides itself).
fn allowed() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let base = ["api", "windows"];
    let core = ["api", "windows", "cluster", "framework"];
    let rows: [(&str, &[&str]); 15] = [
        ("api", &["windows"]),
        ("windows", &[]),
        ("cluster", &base),
        ("framework", &["api", "windows", "cluster"]),
        ("strategies", &core),
        ("gates", &core),
        (
            "planner",
            &[
                "api",
                "windows",
                "cluster",
                "framework",
                "strategies",
                "gates",
            ],
        ),
        (
            "drain",
            &["api", "windows", "cluster", "framework", "planner"],
        ),
        (
            "report",
            &["api", "windows", "cluster", "framework", "planner", "drain"],
        ),
        (
            "timeline",
            &[
                "api",
                "windows",
                "cluster",
                "framework",
                "planner",
                "drain",
                "report",
            ],
        ),
        ("runtime", &["api", "windows", "cluster"]),
        (
            "controller",
            &[
                "api",
                "windows",
                "cluster",
                "framework",
                "planner",
                "drain",
                "runtime",
            ],
        ),
        ("webhook", &["api", "windows", "cluster", "runtime"]),
        (
            "cli",
            &[
                "api",
                "windows",
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

/// The file's code without comments and without its test module.
fn production_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
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
    let first = relative.components().next().expect("a component");
    let name = first.as_os_str().to_string_lossy().into_owned();
    name.trim_end_matches(".rs").to_owned()
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
        let code = production_code(&fs::read_to_string(&path).expect("readable file"));
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

/// Modules of a plugin folder that plugins may share: helpers, not plugins.
const PLUGIN_HELPERS: [&str; 2] = ["shared", "usage"];

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
/// path inside the layer (`["tdm"]`, `["node_utilization", "low"]`).
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
            let own_line = own.starts_with(&target) || target.starts_with(own);
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
            let mut own: Vec<String> = relative
                .components()
                .map(|c| {
                    c.as_os_str()
                        .to_string_lossy()
                        .trim_end_matches(".rs")
                        .to_owned()
                })
                .collect();
            if own.last().is_some_and(|last| last == "mod") {
                own.pop();
            }
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
            "use super::{shared::Selection, pod_life_time::has_exit_code};",
            &["failed_pods"]
        ),
        ["pod_life_time"]
    );
    assert_eq!(
        named("use super::shared::{movable, Selection};", &["tdm"]),
        Vec::<String>::new()
    );
    assert_eq!(
        named(
            "use super::usage::X;\nuse crate::strategies::shared::Y;\nuse super::low::Z;",
            &["node_utilization", "high"]
        ),
        ["node_utilization::low"]
    );
    assert_eq!(
        named("use super::super::tdm::Tdm;", &["node_utilization", "high"]),
        ["tdm"]
    );
    assert_eq!(
        named("use crate::strategies::tdm::Tdm;", &["duplicates"]),
        ["tdm"]
    );
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
