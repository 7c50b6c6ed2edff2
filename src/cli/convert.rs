//! `tidal convert`: a Kubernetes descheduler policy as DeschedulingPolicies.

use std::{collections::BTreeMap, path::PathBuf};

use anyhow::Context;
use clap::Args;

use crate::api::{
    self, GoDuration, PolicyMode,
    descheduler::{ConvertOptions, Converted, Effect, Note, Source},
};

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The descheduler policy (YAML or JSON; `-` reads stdin): the file given to the descheduler's
    /// `--policy-config-file` (descheduler/v1alpha2 or v1alpha1), a ConfigMap holding one under any
    /// key, or the descheduler Helm chart's values file (`deschedulerPolicy`). A folder converts
    /// each of its .yaml, .yml and .json files, each policy named after its file.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filename: Option<PathBuf>,
    /// The same as `-f FILE`, for those who leave out the `-f`.
    #[arg(value_name = "FILE", conflicts_with = "filename", hide = true)]
    pub file: Option<PathBuf>,
    /// The converted policy's name (with several profiles, each policy is NAME-PROFILE). Default:
    /// each profile's name (the descheduler's examples all call theirs `profilename`, so two
    /// converted files would collide).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Mode of the converted policies. DryRun by default: read `tidal report` before evicting.
    #[arg(long, value_enum, default_value_t = ConvertMode::DryRun)]
    pub mode: ConvertMode,
    /// The descheduler's `--descheduling-interval`, as the policies' interval (default: what a Helm
    /// values file says, else 5m).
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<GoDuration>,
    /// Convert even when a setting cannot be carried over and tidal could then evict pods the
    /// descheduler protects. Each such setting is still listed.
    #[arg(long)]
    pub allow_looser: bool,
    /// The value of a PriorityClass a `priorityThreshold` names (`--priority-class high=10000`):
    /// tidal's threshold is a number. Repeat for several classes.
    #[arg(long = "priority-class", value_name = "NAME=VALUE", value_parser = parse_priority_class)]
    pub priority_classes: Vec<(String, i32)>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ConvertMode {
    #[value(name = "DryRun")]
    DryRun,
    #[value(name = "Evict")]
    Evict,
}

fn parse_priority_class(text: &str) -> Result<(String, i32), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: expected NAME=VALUE, e.g. high-priority=10000"))?;
    let value = value
        .trim()
        .parse()
        .map_err(|_| format!("{text:?}: {value:?} is not a priority (a 32-bit integer)"))?;
    Ok((name.trim().to_owned(), value))
}

/// The texts to convert, each with its name for messages: the file, stdin (`-`), or each .yaml,
/// .yml and .json file of a folder, in name order.
fn read_inputs(path: &std::path::Path) -> anyhow::Result<Vec<(String, String)>> {
    if path.as_os_str() == "-" {
        let text = std::io::read_to_string(std::io::stdin()).context("reading stdin")?;
        return Ok(vec![("stdin".to_owned(), text)]);
    }
    if !path.is_dir() {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        return Ok(vec![(path.display().to_string(), text)]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("reading folder {}", path.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    if files.is_empty() {
        anyhow::bail!(
            "{}: no .yaml, .yml or .json file in the folder",
            path.display()
        );
    }
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            Ok((file.display().to_string(), text))
        })
        .collect()
}

impl ConvertArgs {
    /// What became of how often the source ran: its own note, or, given `--interval`, whether that
    /// runs more often than the source did.
    fn interval_notes(&self, source: &Source) -> Vec<Note> {
        let Some(given) = self.interval else {
            return source.interval_note.clone().into_iter().collect();
        };
        match source.min_interval {
            Some(min) if given.as_std() < min.as_std() => vec![Note {
                effect: Effect::Looser,
                text: format!(
                    "--interval {given} is shorter than {min}, how often the descheduler ran: \
                     tidal would run, and evict, more often"
                ),
            }],
            _ => Vec::new(),
        }
    }

    /// The YAML to print (the notes as comments, then one document per policy), and the notes.
    pub(crate) fn convert(&self) -> anyhow::Result<(String, Vec<Note>)> {
        let Some(path) = self.filename.as_ref().or(self.file.as_ref()) else {
            anyhow::bail!(
                "which policy? `tidal convert -f FILE` (a file, a folder, or - for stdin)"
            );
        };
        let file = path.display().to_string();
        let folder = path.is_dir();
        let mut sources = Vec::new();
        for (one, text) in read_inputs(path)? {
            let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)
                .with_context(|| format!("{one} is not YAML or JSON"))?;
            let mut found = Vec::new();
            let mut refused = Vec::new();
            for document in documents.iter().filter(|d| !d.is_null()) {
                match api::descheduler::policies_in(document) {
                    Ok(policies) => found.extend(policies),
                    Err(why) => refused.push(why),
                }
            }
            if found.is_empty() {
                anyhow::bail!(
                    "{one}: {}",
                    refused
                        .first()
                        .map_or("empty: no descheduler policy", String::as_str)
                );
            }
            // A folder's policies are named after their files: the descheduler's examples all name
            // their profile alike.
            let stem = folder.then(|| {
                std::path::Path::new(&one)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            for source in &mut found {
                source.label = if folder {
                    format!("{one}, {}", source.label)
                } else {
                    source.label.clone()
                };
            }
            sources.extend(found.into_iter().map(|source| (stem.clone(), source)));
        }
        let several = sources.len() > 1 || folder;
        let mut converted = Converted {
            policies: Vec::new(),
            notes: Vec::new(),
        };
        for (index, (stem, source)) in sources.iter().enumerate() {
            let label = if folder {
                source.label.clone()
            } else if several {
                format!("{file}, {}", source.label)
            } else {
                file.clone()
            };
            let mut source_notes = self.interval_notes(source);
            source_notes.extend(source.notes.iter().map(|text| Note {
                effect: Effect::Same,
                text: text.clone(),
            }));
            let looser: Vec<&str> = source_notes
                .iter()
                .filter(|n| n.effect == Effect::Looser)
                .map(|n| n.text.as_str())
                .collect();
            if !looser.is_empty() && !self.allow_looser {
                anyhow::bail!(
                    "{label}: {} setting(s) cannot be carried over, and without them tidal could \
                     evict pods the descheduler protects:\n  - {}\nFix them, or pass \
                     --allow-looser to convert anyway",
                    looser.len(),
                    looser.join("\n  - ")
                );
            }
            let options = ConvertOptions {
                mode: match self.mode {
                    ConvertMode::DryRun => PolicyMode::DryRun,
                    ConvertMode::Evict => PolicyMode::Evict,
                },
                interval: self
                    .interval
                    .as_ref()
                    .map(ToString::to_string)
                    .or_else(|| source.interval.clone()),
                allow_looser: self.allow_looser,
                priority_classes: self
                    .priority_classes
                    .iter()
                    .cloned()
                    .collect::<BTreeMap<_, _>>(),
                shared_limit_name: if index == 0 {
                    "descheduler".to_owned()
                } else {
                    format!("descheduler-{}", index + 1)
                },
            };
            let one = api::descheduler::convert(&source.policy, &options)
                .map_err(|e| anyhow::anyhow!("{label}: {e}"))?;
            converted.notes.extend(source_notes);
            let profiles = one.policies.len();
            for mut policy in one.policies {
                let profile = policy.metadata.name.clone().unwrap_or_default();
                let prefix = self.name.as_deref().or(stem.as_deref());
                let name = match prefix {
                    Some(prefix) if profiles == 1 && self.name.is_some() && !folder => {
                        api::descheduler::dns_name(prefix)
                    }
                    Some(prefix) => api::descheduler::dns_name(&format!("{prefix}-{profile}")),
                    None => profile,
                };
                policy.metadata.name = Some(name.clone());
                if converted
                    .policies
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(name.as_str()))
                {
                    anyhow::bail!(
                        "{label}: two policies would both be named {name:?}; name them with \
                         --name, or convert the sources one by one"
                    );
                }
                converted.policies.push(policy);
            }
            converted.notes.extend(one.notes);
        }
        let mut out = format!("# Converted by `tidal convert` from {file}.\n");
        if converted.notes.is_empty() {
            out.push_str("# Every setting was carried over as it is.\n");
        }
        for (effect, title) in [
            (
                Effect::Looser,
                "LOOSER in tidal (could evict pods the descheduler protects; allowed by --allow-looser):",
            ),
            (
                Effect::Stricter,
                "Stricter in tidal (evicts less than the descheduler would):",
            ),
            (
                Effect::Same,
                "Carried over differently or left out, same pods evicted:",
            ),
        ] {
            let notes: Vec<&Note> = converted
                .notes
                .iter()
                .filter(|n| n.effect == effect)
                .collect();
            if notes.is_empty() {
                continue;
            }
            out.push_str(&format!("# {title}\n"));
            for note in notes {
                out.push_str(&format!("#   - {}\n", note.text.replace('\n', " ")));
            }
        }
        for policy in &converted.policies {
            out.push_str("---\n");
            let yaml = serde_saphyr::to_string(policy).context("printing the converted policy")?;
            out.push_str(yaml.trim_end());
            out.push('\n');
        }
        Ok((out, converted.notes))
    }
}
