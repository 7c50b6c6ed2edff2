//! The closed-zone taint: while a revocable zone is closed (or draining before it closes) its nodes
//! carry `tidal.dev/zone-closed=<zone>:NoSchedule`, so that no scheduler even tries to place pods there;
//! the taint goes when the zone opens. `NoSchedule` only: tidal never removes running pods other than
//! through the Eviction API, which `NoExecute` would bypass.
//!
//! `plan` is the pure decision from a snapshot and the zone views; `reconcile` applies it through the
//! API. One reconciler runs it while closed-zone taints are on, on the leader only: [`keep`], which
//! wakes at every zone transition (drain start, close, open), follows node changes (a node labelled
//! into a closed zone, a taint removed by hand) and zone edits, and retries failed patches soon,
//! whether or not any DeschedulingPolicy exists.

use std::{collections::BTreeMap, time::Duration};

use futures::{StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::{
    cluster::{SharedCache, Snapshot},
    controller::cycle_timer,
    framework::{ZoneView, zone_views},
    runtime::{leader::LeaderHandle, until_leading_and_synced},
};

/// The taint key. Everything under it belongs to tidal: taints with this key on nodes that should not
/// carry one are removed.
pub const ZONE_CLOSED: &str = "tidal.dev/zone-closed";
pub const EFFECT: &str = "NoSchedule";
/// Node patches in flight at once.
const CONCURRENCY: usize = 8;
/// Attempts per node when another writer changes the node between our read and our patch.
const ATTEMPTS: usize = 3;

/// The taint of a node in a closed `zone`.
pub fn zone_taint(zone: &str) -> Taint {
    Taint {
        key: ZONE_CLOSED.to_owned(),
        value: Some(zone.to_owned()),
        effect: EFFECT.to_owned(),
        time_added: None,
    }
}

/// One node whose taints must change.
#[derive(Clone, Debug, PartialEq)]
pub struct TaintChange {
    pub node: String,
    /// `Some(zone)`: the node must carry the taint of this closed zone; `None`: no tidal taint.
    pub zone: Option<String>,
    /// The node's taints after the change, as computed from the snapshot.
    pub taints: Vec<Taint>,
}

/// Which zone's taint a node should carry now, if any: its zone must exist, want taints, have readable
/// windows, and be closed or draining. Nodes of unknown zones are left untainted, as tidal does not
/// manage them.
fn wanted_zone<'a>(
    zone_label: Option<&'a str>,
    snapshot: &Snapshot,
    zones: &BTreeMap<String, ZoneView>,
) -> Option<&'a str> {
    let zone = zone_label?;
    let enabled = snapshot
        .zones
        .get(zone)
        .is_some_and(|info| info.spec.taint_when_closed);
    let evicting = zones
        .get(zone)
        .is_some_and(|view| view.state.as_ref().is_ok_and(|s| s.evicting()));
    (enabled && evicting).then_some(zone)
}

/// The node's taints with tidal's taint set for `zone` (or removed for `None`); `None` when they are
/// already right. Other taints keep their order; duplicates of tidal's key are collapsed.
pub fn updated_taints(current: &[Taint], zone: Option<&str>) -> Option<Vec<Taint>> {
    let ours: Vec<&Taint> = current.iter().filter(|t| t.key == ZONE_CLOSED).collect();
    let others = || {
        current
            .iter()
            .filter(|t| t.key != ZONE_CLOSED)
            .cloned()
            .collect::<Vec<_>>()
    };
    match zone {
        None if ours.is_empty() => None,
        None => Some(others()),
        Some(zone) => {
            let wanted = zone_taint(zone);
            let right = matches!(ours.as_slice(), [only]
                if only.value == wanted.value && only.effect == wanted.effect);
            if right {
                return None;
            }
            let mut taints = others();
            taints.push(wanted);
            Some(taints)
        }
    }
}

/// The taint changes the cluster needs, from the snapshot's view of node taints, in node-name order.
pub fn plan(snapshot: &Snapshot, zones: &BTreeMap<String, ZoneView>) -> Vec<TaintChange> {
    snapshot
        .nodes
        .values()
        .filter_map(|state| state.node.as_deref())
        .filter_map(|node| {
            let zone = wanted_zone(node.revocable_zone.as_deref(), snapshot, zones);
            updated_taints(&node.taints, zone).map(|taints| TaintChange {
                node: node.name.clone(),
                zone: zone.map(str::to_owned),
                taints,
            })
        })
        .collect()
}

/// What `reconcile` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaintOutcome {
    /// Nodes that received the taint.
    pub tainted: Vec<String>,
    /// Nodes the taint was removed from.
    pub untainted: Vec<String>,
    /// Nodes whose taints were already right when read fresh (the snapshot lagged).
    pub unchanged: Vec<String>,
    /// Nodes that could not be patched, with the error. Retried soon by [`keep`], and at the next cycle.
    pub failed: Vec<(String, String)>,
}

/// Brings the taints of every node in line with its zone's state. Call it once per controller cycle,
/// as the leader, with the cycle's snapshot and `plan::zone_views(&snapshot, now).0`. Each changed node
/// is read fresh and patched with its resourceVersion as a precondition, so taints other controllers
/// add in between are never lost.
pub async fn reconcile(
    client: &Client,
    snapshot: &Snapshot,
    zones: &BTreeMap<String, ZoneView>,
) -> TaintOutcome {
    apply(client, &plan(snapshot, zones)).await
}

/// How [`keep`] paces itself.
#[derive(Clone, Debug)]
pub struct KeeperSettings {
    /// After a node or zone changes, wait this long for more changes before reconciling.
    pub debounce: Duration,
    /// After a patch failed, try again this soon.
    pub retry: Duration,
    /// Reconcile at least this often, whatever happens.
    pub resync: Duration,
}

impl Default for KeeperSettings {
    fn default() -> Self {
        KeeperSettings {
            debounce: Duration::from_millis(500),
            retry: Duration::from_secs(5),
            resync: Duration::from_secs(60),
        }
    }
}

/// When [`keep`] should look again after a pass at `now`: a zone's next transition, a retry of
/// failed patches, or the periodic resync, whichever comes first.
pub fn next_pass(
    snapshot: &Snapshot,
    now: Timestamp,
    failed: bool,
    settings: &KeeperSettings,
) -> Duration {
    let transition = snapshot
        .zones
        .values()
        .filter_map(|zone| cycle_timer::zone_clock(zone, None, now, None).phase.next)
        .min();
    let mut wait = cycle_timer::sleep_for(transition, now, settings.resync);
    if failed {
        wait = wait.min(settings.retry);
    }
    wait
}

/// Keeps closed-zone taints right between controller cycles, as long as `shutdown` is not cancelled.
/// Only acts while `leader` leads and the cache is synced; every patch checks leadership first.
pub async fn keep(
    client: Client,
    shared: SharedCache,
    leader: LeaderHandle,
    shutdown: CancellationToken,
    settings: KeeperSettings,
) {
    let mut leadership = leader.clone();
    let mut nodes = shared.node_changes();
    let mut zones = shared.config_changes();
    loop {
        if !until_leading_and_synced("zone-taints", &leader, &shared, &shutdown, || {}).await {
            return;
        }
        nodes.borrow_and_update();
        zones.borrow_and_update();
        let now = Timestamp::now();
        let snapshot = shared.read().nodes_and_zones();
        let changes = plan(&snapshot, &zone_views(&snapshot, now).0);
        let mut failed = false;
        if !changes.is_empty() {
            let outcome = apply_while(&client, &changes, || {
                leader.is_leader() && !shutdown.is_cancelled()
            })
            .await;
            failed = !outcome.failed.is_empty();
            if failed {
                warn!(
                    failed = outcome.failed.len(),
                    retry = ?settings.retry,
                    "some zone-closed taints could not be updated; retrying soon"
                );
            }
        }
        let wait = next_pass(&snapshot, now, failed, &settings);
        debug!(?wait, "zone-closed taints reconciled");
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            Ok(()) = nodes.changed() => debounce(settings.debounce, &shutdown).await,
            Ok(()) = zones.changed() => debounce(settings.debounce, &shutdown).await,
            () = leadership.lost() => {}
            () = shutdown.cancelled() => return,
        }
    }
}

/// Lets a burst of changes (a node pool relabelled at once) settle into one pass.
async fn debounce(delay: Duration, shutdown: &CancellationToken) {
    tokio::select! {
        () = tokio::time::sleep(delay) => {}
        () = shutdown.cancelled() => {}
    }
}

/// Applies taint changes through the API.
pub async fn apply(client: &Client, changes: &[TaintChange]) -> TaintOutcome {
    apply_while(client, changes, || true).await
}

/// Applies taint changes, checking `may_write` right before each patch (a change it refuses is
/// reported as failed and retried next time).
pub async fn apply_while(
    client: &Client,
    changes: &[TaintChange],
    may_write: impl Fn() -> bool,
) -> TaintOutcome {
    let api: Api<Node> = Api::all(client.clone());
    let may_write = &may_write;
    let results: Vec<(TaintChange, Result<bool, String>)> = stream::iter(changes.iter().cloned())
        .map(|change| {
            let api = api.clone();
            async move {
                let result = apply_one(&api, &change, may_write).await;
                (change, result)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut outcome = TaintOutcome::default();
    for (change, result) in results {
        match result {
            Ok(true) if change.zone.is_some() => {
                info!(node = %change.node, zone = change.zone.as_deref().unwrap_or(""), "zone closed: node tainted");
                outcome.tainted.push(change.node);
            }
            Ok(true) => {
                info!(node = %change.node, "zone open: taint removed");
                outcome.untainted.push(change.node);
            }
            Ok(false) => outcome.unchanged.push(change.node),
            Err(error) => {
                warn!(node = %change.node, %error, "could not update the zone-closed taint");
                outcome.failed.push((change.node, error));
            }
        }
    }
    for list in [
        &mut outcome.tainted,
        &mut outcome.untainted,
        &mut outcome.unchanged,
    ] {
        list.sort();
    }
    outcome.failed.sort();
    outcome
}

/// Reads the node, and patches its taints if they still need the change. `Ok(false)`: nothing to do.
async fn apply_one(
    api: &Api<Node>,
    change: &TaintChange,
    may_write: &impl Fn() -> bool,
) -> Result<bool, String> {
    let mut last_error = String::new();
    for _ in 0..ATTEMPTS {
        let node = match api.get(&change.node).await {
            Ok(node) => node,
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(false),
            Err(error) => return Err(error.to_string()),
        };
        let current = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        let Some(taints) = updated_taints(&current, change.zone.as_deref()) else {
            return Ok(false);
        };
        if !may_write() {
            return Err("not the leader any more".to_owned());
        }
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": if taints.is_empty() { serde_json::Value::Null } else { json!(taints) }},
        });
        match api
            .patch(&change.node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(true),
            // Someone else changed the node since we read it: read again.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                last_error = status.message;
            }
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(false),
            Err(error) => return Err(error.to_string()),
        }
    }
    Err(format!("conflicts on every attempt: {last_error}"))
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use k8s_openapi::api::core::v1::Node;
    use serde_json::json;

    use super::*;
    use crate::{
        api::RevocableZone,
        cluster::{ClusterCache, Ingest},
        framework::zone_views,
        testkit as kit,
    };

    fn node(name: &str, zone: Option<&str>, taints: serde_json::Value) -> Node {
        let node = kit::node(name).patch(json!({"spec": {"taints": taints}}));
        match zone {
            Some(zone) => node.zone(zone),
            None => node,
        }
        .object()
    }

    fn zone(name: &str, window: &str, taint: Option<bool>) -> RevocableZone {
        let zone = kit::zone(name).window(window);
        match taint {
            Some(taint) => zone.spec(json!({"taintWhenClosed": taint})),
            None => zone,
        }
        .object()
    }

    fn changes(nodes: &[Node], zones: &[RevocableZone], now: &str) -> Vec<TaintChange> {
        let mut cache = ClusterCache::new();
        for n in nodes {
            n.apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH).unwrap();
        }
        for z in zones {
            z.apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH).unwrap();
        }
        let snapshot = cache.snapshot();
        let now: Timestamp = now.parse().unwrap();
        plan(&snapshot, &zone_views(&snapshot, now).0)
    }

    const NIGHT: &str = "2026-03-04T23:00:00Z";
    const DAY: &str = "2026-03-04T12:00:00Z";

    #[test]
    fn closed_zone_nodes_get_the_taint_and_keep_theirs() {
        let gpu = json!([{"key": "gpu", "value": "true", "effect": "NoSchedule"}]);
        let nodes = [
            node("a", Some("z1"), gpu.clone()),
            node("b", Some("z1"), json!(null)),
            node("plain", None, json!(null)),
        ];
        let got = changes(&nodes, &[zone("z1", "08:00-21:00", None)], NIGHT);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].node, "a");
        assert_eq!(got[0].zone.as_deref(), Some("z1"));
        assert_eq!(got[0].taints[0].key, "gpu");
        assert_eq!(got[0].taints[1], zone_taint("z1"));
        assert_eq!(got[1].taints, vec![zone_taint("z1")]);
        // Open: nothing to do.
        assert!(changes(&nodes, &[zone("z1", "08:00-21:00", None)], DAY).is_empty());
    }

    #[test]
    fn opening_removes_only_tidals_taint() {
        let tainted = json!([
            {"key": "gpu", "effect": "NoSchedule"},
            {"key": "tidal.dev/zone-closed", "value": "z1", "effect": "NoSchedule"}
        ]);
        let got = changes(
            &[node("a", Some("z1"), tainted)],
            &[zone("z1", "08:00-21:00", None)],
            DAY,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].zone, None);
        assert_eq!(got[0].taints.len(), 1);
        assert_eq!(got[0].taints[0].key, "gpu");
    }

    #[test]
    fn already_tainted_nodes_are_left_alone_and_stale_values_fixed() {
        let ok = json!([{"key": "tidal.dev/zone-closed", "value": "z1", "effect": "NoSchedule"}]);
        assert!(
            changes(
                &[node("a", Some("z1"), ok)],
                &[zone("z1", "08:00-21:00", None)],
                NIGHT
            )
            .is_empty()
        );
        let stale = json!([
            {"key": "tidal.dev/zone-closed", "value": "old", "effect": "NoSchedule"},
            {"key": "tidal.dev/zone-closed", "value": "z1", "effect": "NoSchedule"}
        ]);
        let got = changes(
            &[node("a", Some("z1"), stale)],
            &[zone("z1", "08:00-21:00", None)],
            NIGHT,
        );
        assert_eq!(got[0].taints, vec![zone_taint("z1")]);
    }

    #[test]
    fn zones_that_opt_out_or_are_unknown_carry_no_taint() {
        let ours = json!([{"key": "tidal.dev/zone-closed", "value": "z1", "effect": "NoSchedule"}]);
        let got = changes(
            &[node("a", Some("z1"), ours.clone())],
            &[zone("z1", "08:00-21:00", Some(false))],
            NIGHT,
        );
        assert_eq!(got.len(), 1);
        assert!(got[0].taints.is_empty());
        // A node labelled with a zone that has no RevocableZone, or that left its zone.
        let got = changes(&[node("a", Some("ghost"), ours.clone())], &[], NIGHT);
        assert!(got[0].taints.is_empty());
        let got = changes(
            &[node("a", None, ours)],
            &[zone("z1", "08:00-21:00", None)],
            NIGHT,
        );
        assert!(got[0].taints.is_empty());
    }

    #[test]
    fn a_draining_zone_is_tainted_already() {
        let mut z = zone("z1", "08:00-21:00", None);
        z.spec.drain_before = "1h".parse().unwrap();
        let got = changes(
            &[node("a", Some("z1"), json!(null))],
            &[z],
            "2026-03-04T20:30:00Z",
        );
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn the_keeper_looks_again_at_the_next_transition_or_sooner_after_a_failure() {
        let settings = KeeperSettings {
            debounce: Duration::from_millis(10),
            retry: Duration::from_secs(5),
            resync: Duration::from_secs(60),
        };
        let mut cache = ClusterCache::new();
        zone("z1", "08:00-21:00", None)
            .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
            .unwrap();
        let snapshot = cache.nodes_and_zones();
        // It closes at 21:00:01 (21:00:00 is still inside the window).
        let now: Timestamp = "2026-03-04T20:59:30Z".parse().unwrap();
        assert_eq!(
            next_pass(&snapshot, now, false, &settings),
            Duration::from_millis(31_005)
        );
        assert_eq!(next_pass(&snapshot, now, true, &settings), settings.retry);
        let noon: Timestamp = DAY.parse().unwrap();
        assert_eq!(
            next_pass(&snapshot, noon, false, &settings),
            settings.resync
        );
    }

    #[test]
    fn updated_taints_is_none_when_nothing_changes() {
        assert_eq!(updated_taints(&[], None), None);
        assert_eq!(updated_taints(&[zone_taint("z")], Some("z")), None);
        assert_eq!(updated_taints(&[zone_taint("z")], None), Some(vec![]));
    }
}
