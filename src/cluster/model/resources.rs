//! Resource amounts the way the scheduler counts them: CPU in millicores, everything else in whole units.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, PodSpec},
    apimachinery::pkg::api::resource::Quantity,
};

use crate::cluster::model::quantity::{self, QuantityError};

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
    /// Extended resources (`nvidia.com/gpu`, `hugepages-2Mi`, ...), in whole units. Boxed, and `None`
    /// rather than empty (so that equal amounts compare equal): most pods ask for none, and inline the
    /// map would cost every cached pod 24 bytes instead of 8.
    #[expect(
        clippy::box_collection,
        reason = "the box is for the inline size (8 bytes, not 24), not for the entries"
    )]
    pub(crate) scalar: Option<Box<BTreeMap<String, i64>>>,
}

pub(crate) const CPU: &str = "cpu";
pub(crate) const MEMORY: &str = "memory";
pub(crate) const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub(crate) const PODS: &str = "pods";

/// The largest amount of one resource tidal accepts on one object (2^52: 4 PiB of memory, 4.5 billion
/// cores). Capping inputs keeps every sum exact: a node's requests are added and subtracted as pods come
/// and go, and that bookkeeping must undo itself exactly, which saturating arithmetic would not.
pub(crate) const MAX_AMOUNT: i64 = 1 << 52;

impl Resources {
    /// Reads a resource list; the first malformed quantity is returned as an error with its resource name.
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Result<Self, (String, QuantityError)> {
        let mut out = Resources::default();
        for (name, quantity) in list {
            let parsed = if name == CPU {
                quantity::milli_value(quantity)
            } else {
                quantity::value(quantity)
            };
            let amount = parsed.map_err(|e| (name.clone(), e))?;
            if !(0..=MAX_AMOUNT).contains(&amount) {
                let error = QuantityError {
                    text: quantity.0.clone(),
                    reason: "outside the range tidal counts (0 to 2^52 units)",
                };
                return Err((name.clone(), error));
            }
            out.set(name, amount);
        }
        Ok(out)
    }

    /// The amount of one resource by its Kubernetes name (millicores for `cpu`).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.pods,
            other => self
                .scalar
                .as_ref()
                .and_then(|scalar| scalar.get(other))
                .copied()
                .unwrap_or(0),
        }
    }

    pub fn set(&mut self, name: &str, amount: i64) {
        match name {
            CPU => self.milli_cpu = amount,
            MEMORY => self.memory = amount,
            EPHEMERAL_STORAGE => self.ephemeral_storage = amount,
            PODS => self.pods = amount,
            other => {
                self.scalar
                    .get_or_insert_default()
                    .insert(other.to_owned(), amount);
            }
        }
    }

    // Wrapping, not saturating: with inputs capped at MAX_AMOUNT no realistic sum overflows, and wrapping
    // keeps `add` then `sub` an exact round trip even if one ever did.
    pub fn add(&mut self, other: &Resources) {
        self.zip_with(other, i64::wrapping_add);
    }

    pub fn sub(&mut self, other: &Resources) {
        self.zip_with(other, i64::wrapping_sub);
    }

    /// Component-wise maximum.
    pub fn max_with(&mut self, other: &Resources) {
        self.zip_with(other, i64::max);
    }

    fn zip_with(&mut self, other: &Resources, f: impl Fn(i64, i64) -> i64) {
        self.milli_cpu = f(self.milli_cpu, other.milli_cpu);
        self.memory = f(self.memory, other.memory);
        self.ephemeral_storage = f(self.ephemeral_storage, other.ephemeral_storage);
        self.pods = f(self.pods, other.pods);
        if let Some(theirs) = &other.scalar {
            let scalar = self.scalar.get_or_insert_default();
            for (name, amount) in theirs.iter() {
                let mine = scalar.entry(name.clone()).or_insert(0);
                *mine = f(*mine, *amount);
            }
        }
        // Keep the map canonical, so that equal amounts compare equal however they were reached.
        if let Some(scalar) = &mut self.scalar {
            scalar.retain(|_, amount| *amount != 0);
            if scalar.is_empty() {
                self.scalar = None;
            }
        }
    }

    /// Names of all resources with a non-zero amount, `cpu`, `memory`, `ephemeral-storage`, `pods` first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        [
            (CPU, self.milli_cpu),
            (MEMORY, self.memory),
            (EPHEMERAL_STORAGE, self.ephemeral_storage),
            (PODS, self.pods),
        ]
        .into_iter()
        .filter(|(_, amount)| *amount != 0)
        .map(|(name, _)| name)
        .chain(
            self.scalar
                .iter()
                .flat_map(|s| s.keys())
                .map(String::as_str),
        )
    }
}

/// What a pod asks the scheduler for, computed as kube-scheduler does: the larger of the sum of its app
/// containers (plus sidecars) and its largest init container (plus the sidecars started before it), plus
/// pod overhead; pod-level `resources.requests` replace the container sums for the resources they name.
pub(crate) fn pod_requests(spec: &PodSpec) -> Result<Resources, (String, QuantityError)> {
    let mut total = Resources::default();
    for container in &spec.containers {
        total.add(&container_requests(container)?);
    }
    let mut sidecars = Resources::default();
    let mut largest_init = Resources::default();
    for init in spec.init_containers.iter().flatten() {
        let requests = container_requests(init)?;
        let in_effect = if init.restart_policy.as_deref() == Some("Always") {
            total.add(&requests);
            sidecars.add(&requests);
            sidecars.clone()
        } else {
            let mut with_sidecars = requests;
            with_sidecars.add(&sidecars);
            with_sidecars
        };
        largest_init.max_with(&in_effect);
    }
    total.max_with(&largest_init);
    if let Some(pod_level) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        let pod_level = Resources::from_list(pod_level)?;
        for name in pod_level.names().map(str::to_owned).collect::<Vec<_>>() {
            total.set(&name, pod_level.get(&name));
        }
    }
    if let Some(overhead) = &spec.overhead {
        total.add(&Resources::from_list(overhead)?);
    }
    total.pods = 1;
    Ok(total)
}

fn container_requests(container: &Container) -> Result<Resources, (String, QuantityError)> {
    match container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
    {
        Some(requests) => Resources::from_list(requests),
        None => Ok(Resources::default()),
    }
}

/// `requests` fit into what `node` has left once `requested` is taken: every resource the pod asks for
/// (including one pod slot) is available.
pub(crate) fn fits(requests: &Resources, allocatable: &Resources, requested: &Resources) -> bool {
    requests
        .names()
        .all(|name| requests.get(name) <= allocatable.get(name).saturating_sub(requested.get(name)))
}

/// `cpu 500m, memory 256Mi, nvidia.com/gpu 1`: a pod's requests for messages.
pub(crate) fn describe(requests: &Resources) -> String {
    requests
        .names()
        .filter(|name| *name != PODS)
        .map(|name| format!("{name} {}", format_amount(name, requests.get(name))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// CPU in millicores, memory-like amounts in binary units (exact, else to a tenth), everything else as a
/// count.
pub(crate) fn format_amount(resource: &str, amount: i64) -> String {
    let mut out = String::new();
    write_amount(&mut out, resource, amount);
    out
}

/// [`format_amount`] onto `out`: reasons name amounts for every move planned, so without a string each
/// and, for tenths, without float formatting.
pub(crate) fn write_amount(out: &mut String, resource: &str, amount: i64) {
    match resource {
        CPU => {
            write_int(out, amount);
            out.push('m');
        }
        MEMORY | EPHEMERAL_STORAGE => {
            for (unit, shift) in [("Gi", 30), ("Mi", 20), ("Ki", 10)] {
                let size = 1i64 << shift;
                if amount != 0 && amount % size == 0 {
                    write_int(out, amount >> shift);
                    out.push_str(unit);
                    return;
                }
                if amount.abs() >= size {
                    match tenths(amount, shift) {
                        Some(t) => {
                            write_int(out, t / 10);
                            out.push('.');
                            write_int(out, t % 10);
                            out.push_str(unit);
                        }
                        None => {
                            use std::fmt::Write;
                            let _ = write!(out, "{:.1}{unit}", amount as f64 / size as f64);
                        }
                    }
                    return;
                }
            }
            write_int(out, amount);
        }
        _ => write_int(out, amount),
    }
}

/// `value` in decimal onto `out`, as `{value}` writes it, without the formatting machinery (two digits
/// per division, as the standard library's own integer formatting does).
fn write_int(out: &mut String, value: i64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
                                2021222324252627282930313233343536373839\
                                4041424344454647484950515253545556575859\
                                6061626364656667686970717273747576777879\
                                8081828384858687888990919293949596979899";
    // 20 digits hold u64::MAX, so any i64's magnitude.
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value.unsigned_abs();
    while rest >= 100 {
        let pair = (rest % 100) as usize * 2;
        rest /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if rest >= 10 {
        let pair = rest as usize * 2;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + rest as u8;
    }
    if value < 0 {
        out.push('-');
    }
    // ASCII digits only, so this never fails.
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// `amount / 2^shift` in tenths, rounded as `{:.1}` rounds the exact quotient (half to even). `None`
/// outside [0, MAX_AMOUNT], where the float path is kept.
fn tenths(amount: i64, shift: u32) -> Option<i64> {
    if !(0..=MAX_AMOUNT).contains(&amount) {
        return None;
    }
    let size = 1i64 << shift;
    let scaled = (amount & (size - 1)) * 10;
    let mut tenths = (amount >> shift) * 10 + (scaled >> shift);
    let rest = scaled & (size - 1);
    let half = size / 2;
    if rest > half || (rest == half && tenths % 2 == 1) {
        tenths += 1;
    }
    Some(tenths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenths_are_written_as_float_formatting_rounds_them() {
        let float = |amount: i64, unit: &str, shift: u32| {
            format!("{:.1}{unit}", amount as f64 / (1i64 << shift) as f64)
        };
        let gi = 1i64 << 30;
        let mut amounts = vec![gi + 1, gi * 3 / 2 + gi / 4, MAX_AMOUNT, MAX_AMOUNT - 1];
        // Exact halves of a tenth (ties) and their neighbours, where rounding modes differ.
        for whole in [1i64, 2, 7, 1023] {
            for twentieth in 0..20 {
                let at = whole * gi + twentieth * gi / 20;
                amounts.extend([at - 1, at, at + 1]);
            }
        }
        amounts.extend((0..5000).map(|i| gi + i * 7_919_191));
        for amount in amounts {
            let mut written = String::new();
            write_amount(&mut written, MEMORY, amount);
            if amount >= gi && amount % gi != 0 {
                assert_eq!(written, float(amount, "Gi", 30), "{amount}");
            }
        }
        for amount in [(1i64 << 20) * 5 / 2, (1 << 20) * 7 / 4, 3 << 10 | 512] {
            assert_eq!(
                format_amount(MEMORY, amount),
                if amount >= 1 << 20 {
                    float(amount, "Mi", 20)
                } else {
                    float(amount, "Ki", 10)
                }
            );
        }
    }
    #[test]
    fn amounts_are_written_as_formatting_writes_them() {
        let mut ints = vec![0i64, 1, -1, 9, 10, -10, 99, 100, 1023, 1024, 1025];
        ints.extend([
            i64::MAX,
            i64::MIN,
            i64::MAX - 1,
            i64::MIN + 1,
            MAX_AMOUNT,
            -MAX_AMOUNT,
        ]);
        ints.extend((0..19).map(|p| 10i64.pow(p)));
        ints.extend((1..19).map(|p| 10i64.pow(p) - 1));
        for value in ints {
            let mut written = String::from("x");
            write_int(&mut written, value);
            assert_eq!(written, format!("x{value}"));
            assert_eq!(format_amount(CPU, value), format!("{value}m"));
            assert_eq!(format_amount("pods", value), value.to_string());
        }
        let (ki, mi, gi) = (1i64 << 10, 1i64 << 20, 1i64 << 30);
        let cases = [
            (0, "0"),
            (512, "512"),
            (-512, "-512"),
            (ki, "1Ki"),
            (-ki, "-1Ki"),
            (3 * ki / 2, "1.5Ki"),
            (mi, "1Mi"),
            (5 * mi / 2, "2.5Mi"),
            (3 * gi, "3Gi"),
            (-3 * gi, "-3Gi"),
            (gi + gi / 10, "1.1Gi"),
            (-(gi + gi / 2), "-1.5Gi"),
            (1000 * gi + gi * 3 / 10, "1000.3Gi"),
        ];
        for (amount, text) in cases {
            assert_eq!(format_amount(MEMORY, amount), text, "{amount}");
            assert_eq!(format_amount(EPHEMERAL_STORAGE, amount), text, "{amount}");
        }
        let mut appended = String::from("cpu ");
        write_amount(&mut appended, CPU, 1500);
        appended.push_str(", memory ");
        write_amount(&mut appended, MEMORY, 3 * gi);
        assert_eq!(appended, "cpu 1500m, memory 3Gi");
    }

    use k8s_openapi::api::core::v1::ResourceRequirements;

    fn container(cpu: &str, memory: &str, restart_policy: Option<&str>) -> Container {
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: Some(BTreeMap::from([
                    (CPU.to_owned(), Quantity(cpu.into())),
                    (MEMORY.to_owned(), Quantity(memory.into())),
                ])),
                ..Default::default()
            }),
            restart_policy: restart_policy.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn sums_containers_and_takes_max_of_init() {
        let spec = PodSpec {
            containers: vec![
                container("500m", "1Gi", None),
                container("250m", "1Gi", None),
            ],
            init_containers: Some(vec![container("2", "512Mi", None)]),
            ..Default::default()
        };
        let r = pod_requests(&spec).unwrap();
        assert_eq!(r.milli_cpu, 2000);
        assert_eq!(r.memory, 2 << 30);
        assert_eq!(r.pods, 1);
    }

    #[test]
    fn sidecars_add_to_app_containers_and_to_later_init_containers() {
        let spec = PodSpec {
            containers: vec![container("1", "1Gi", None)],
            init_containers: Some(vec![
                container("100m", "100Mi", Some("Always")),
                container("1500m", "10Mi", None),
            ]),
            ..Default::default()
        };
        let r = pod_requests(&spec).unwrap();
        // app: 1000m + sidecar 100m = 1100m; second init: 1500m + 100m = 1600m.
        assert_eq!(r.milli_cpu, 1600);
        assert_eq!(r.memory, (1 << 30) + (100 << 20));
    }

    #[test]
    fn overhead_is_added() {
        let spec = PodSpec {
            containers: vec![container("1", "1Gi", None)],
            overhead: Some(BTreeMap::from([(CPU.to_owned(), Quantity("250m".into()))])),
            ..Default::default()
        };
        assert_eq!(pod_requests(&spec).unwrap().milli_cpu, 1250);
    }

    #[test]
    fn malformed_quantity_names_the_resource() {
        let spec = PodSpec {
            containers: vec![container("lots", "1Gi", None)],
            ..Default::default()
        };
        let (name, err) = pod_requests(&spec).unwrap_err();
        assert_eq!(name, "cpu");
        assert!(err.to_string().contains("lots"));
    }

    #[test]
    fn amounts_beyond_the_cap_are_errors() {
        let list = BTreeMap::from([(MEMORY.to_owned(), Quantity("5E".into()))]);
        let (name, err) = Resources::from_list(&list).unwrap_err();
        assert_eq!(name, MEMORY);
        assert!(err.reason.contains("2^52"), "{err}");
        let negative = BTreeMap::from([(CPU.to_owned(), Quantity("-1".into()))]);
        assert!(Resources::from_list(&negative).is_err());
    }

    #[test]
    fn add_then_sub_is_exact() {
        let mut big = Resources::default();
        big.set(MEMORY, MAX_AMOUNT);
        let mut sum = Resources::default();
        for _ in 0..3 {
            sum.add(&big);
        }
        sum.sub(&big);
        sum.sub(&big);
        assert_eq!(sum, big);
    }

    #[test]
    fn arithmetic_keeps_scalars_canonical() {
        let mut a = Resources::default();
        a.set("nvidia.com/gpu", 2);
        let b = a.clone();
        a.sub(&b);
        assert_eq!(a, Resources::default());
        assert_eq!(a.scalar, None, "no empty map left behind");
        assert_eq!(a.names().count(), 0);
        a.set("nvidia.com/gpu", 1);
        a.add(&b);
        assert_eq!((a.get("nvidia.com/gpu"), a.get("example.com/fpga")), (3, 0));
        assert_eq!(a.names().collect::<Vec<_>>(), ["nvidia.com/gpu"]);
    }

    #[test]
    fn fit_counts_every_requested_resource_and_the_pod_slot() {
        let mut allocatable = Resources {
            milli_cpu: 4000,
            memory: 8 << 30,
            pods: 10,
            ..Default::default()
        };
        allocatable.set("nvidia.com/gpu", 2);
        let mut requested = Resources {
            milli_cpu: 3000,
            memory: 1 << 30,
            pods: 9,
            ..Default::default()
        };
        let pod = Resources {
            milli_cpu: 1000,
            memory: 1 << 30,
            pods: 1,
            ..Default::default()
        };
        assert!(fits(&pod, &allocatable, &requested));
        requested.pods = 10;
        assert!(!fits(&pod, &allocatable, &requested), "no pod slot left");
        requested.pods = 0;
        let mut gpu_pod = pod.clone();
        gpu_pod.set("nvidia.com/gpu", 3);
        assert!(!fits(&gpu_pod, &allocatable, &requested));
        gpu_pod.set("example.com/fpga", 1);
        gpu_pod.set("nvidia.com/gpu", 1);
        assert!(
            !fits(&gpu_pod, &allocatable, &requested),
            "node lacks the resource"
        );
    }
}
