//! The two strategies that balance nodes by how full they are: lowNodeUtilization spreads pods off
//! overutilized nodes, highNodeUtilization packs them off underutilized ones. Both measure nodes the
//! same way (`usage`).

pub(crate) mod high;
pub(crate) mod low;
mod usage;
