//! End-to-end tests against live processes on loopback: `tidal run` (alone, and as replicas electing a
//! leader) against the fake API server from `tidal-testkit`, the closed-zone taints it keeps, measured
//! usage, and `tidal webhook` over HTTPS (in this process, and as its own process against hostile
//! clients). One binary, so the library is linked once.

// Each module uses its own part of the shared helpers.
#![allow(dead_code)]

mod support;

mod closed_pipe;
mod controller;
mod drain;
mod first_contact;
mod ha;
mod prometheus;
mod protobuf;
mod taints;
mod unreachable;
mod unreadable;
mod usage;
mod watch_list;
mod webhook;
mod webhook_hostile;
