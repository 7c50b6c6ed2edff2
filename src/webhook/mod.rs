//! Admission: tidal's placement rules for revocable nodes, enforced when pods are created and bound.
//!
//! tidal works with any scheduler, so instead of a scheduler plugin (Volcano's TDM predicate and
//! node order) it uses admission webhooks, backed by the controller:
//! - `placement`: the rules as pure functions of plain data (may this pod be bound to this node now?);
//! - `mutate`: the node-affinity patch a pod gets at CREATE;
//! - `review`: AdmissionReview parsing and the per-endpoint decision, answered from the cache;
//! - `server`, `tls`, `metrics`, `command`: the `tidal webhook` process (HTTPS with certificate reload),
//!   and `intake`, the memory large bodies get while they arrive.
//!
//! What slips through (webhook down, pods older than tidal) is swept by the TDM strategy's placement
//! violations, under the usual gates; closed zones are also tainted (see `crate::controller::taints`).

pub mod command;
pub(crate) mod intake;
pub(crate) mod metrics;
pub(crate) mod mutate;
pub(crate) mod placement;
pub mod review;
pub mod server;
pub mod tls;

pub use command::{WebhookArgs, serve};
pub use placement::{Verdict, check_binding};
pub use review::{Endpoint, ReviewError, decide, parse_review};
