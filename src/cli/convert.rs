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
    /// key, or the descheduler Helm chart's values file (`deschedulerPolicy`).
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filename: PathBuf,
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
        let file = self.filename.display().to_string();
        let text = if self.filename.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).context("reading stdin")?
        } else {
            std::fs::read_to_string(&self.filename).with_context(|| format!("reading {file}"))?
        };
        let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)
            .with_context(|| format!("{file} is not YAML or JSON"))?;
        let mut sources = Vec::new();
        let mut refused = Vec::new();
        for document in documents.iter().filter(|d| !d.is_null()) {
            match api::descheduler::policies_in(document) {
                Ok(found) => sources.extend(found),
                Err(why) => refused.push(why),
            }
        }
        if sources.is_empty() {
            anyhow::bail!(
                "{file}: {}",
                refused
                    .first()
                    .map_or("empty: no descheduler policy", String::as_str)
            );
        }
        let several = sources.len() > 1;
        let mut converted = Converted {
            policies: Vec::new(),
            notes: Vec::new(),
        };
        for (index, source) in sources.iter().enumerate() {
            let label = if several {
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
            for policy in one.policies {
                let name = policy.metadata.name.clone().unwrap_or_default();
                if converted
                    .policies
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(name.as_str()))
                {
                    anyhow::bail!(
                        "{label}: two policies would both be named {name:?}; convert the \
                         sources one by one"
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
