//! Tests that need no process and no network: the CLI (`tidal report` end to end, the strategy
//! catalogue), the generated CRDs and the shipped examples against them, the chart's RBAC against what
//! each process watches, the chart's alerts and dashboard against the metrics tidal serves, the
//! snapshot's property tests, the layering and the architecture page. One binary, so the library is
//! linked once.

mod architecture_doc;
mod chart_metrics;
mod chart_rbac;
mod cli;
mod convert_never_looser;
mod crds;
mod descheduler_decisions;
mod descheduler_parity;
mod drain_work;
mod eviction_notice_e2e;
mod kubectl_habits;
mod layers;
mod pods_that_end_e2e;
mod policies;
mod report_e2e;
mod report_policies_e2e;
mod snapshot_props;
mod strategies_report;
mod support;
mod timeline_e2e;
mod why_e2e;
