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
    let rows: [(&str, &[&str]); 13] = [
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
            "report",
            &["api", "windows", "cluster", "framework", "planner"],
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
                "report",
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
