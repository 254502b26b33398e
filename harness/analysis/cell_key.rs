//! What makes rows the same cell, made in one place: the row's scenario and cell name, and the
//! knobs the knob declaration (`model::knobs`) gives the identity role, each as the row records
//! it. A [`CellKey`] is a value, compared, ordered and hashed as one: `compare`, `history`,
//! `report` and `export` key their maps by it. It is put into words only in `present`
//! (`present::cell_key`).

use std::cmp::Ordering;
use std::fmt::{Display, Write};

use results::Row;

/// A cell-key field that a history may let vary between runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Varying {
    /// The /dev/shm size (and so the runtime that provides it).
    Shm,
    /// The torch allocation profile.
    Torch,
    /// The kernel (a VM's, or the host's).
    Kernel,
    /// The container engine and OCI runtime.
    Runtime,
    /// The container engine alone (its OCI runtime stays part of the cell).
    Engine,
}

impl Varying {
    /// The knobs (by flag name) a key along this field leaves out.
    fn hidden(varying: Option<Varying>) -> &'static [&'static str] {
        match varying {
            Some(Varying::Shm) => &["shm-size", "runtime"],
            Some(Varying::Torch) => &["torch"],
            Some(Varying::Kernel) => &["kernel", "runtime"],
            Some(Varying::Runtime) => &["engine", "oci-runtime"],
            Some(Varying::Engine) => &["engine"],
            None => &[],
        }
    }
}

/// What must be equal for two rows to be the same cell.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CellKey {
    pub scenario: String,
    pub cell: String,
    /// The identity knobs, in the declaration's order (None: cells paired by scenario and name
    /// alone, `compare --match name`).
    knobs: Option<KnobValues>,
}

/// Identity knobs and their values as a row records them, kept as one text and where each
/// value ends in it: a key made per row of a million costs a few allocations, not one per knob.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct KnobValues {
    /// Each knob's flag name and the end of its value in `values`.
    ends: Vec<(&'static str, u32)>,
    values: String,
}

impl KnobValues {
    fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().map(|(_, end)| *end));
        self.ends
            .iter()
            .zip(starts)
            .map(|((name, end), start)| (*name, &self.values[start as usize..*end as usize]))
    }
}

impl CellKey {
    /// The cell a row ran: its scenario, its name and every identity knob.
    pub fn of(r: &Row) -> CellKey {
        CellKey::except(r, None)
    }

    /// The cell a row ran, without the knobs that vary along a history's field.
    pub fn except(r: &Row, varying: Option<Varying>) -> CellKey {
        let hidden = Varying::hidden(varying);
        let mut knobs = KnobValues {
            ends: Vec::with_capacity(40),
            values: String::with_capacity(160),
        };
        each_knob(r, &mut |name, value| {
            if !hidden.contains(&name) {
                let _ = write!(knobs.values, "{value}");
                let end = u32::try_from(knobs.values.len()).unwrap_or(u32::MAX);
                knobs.ends.push((name, end));
            }
        });
        CellKey {
            scenario: r.scenario.clone(),
            cell: r.cell.clone(),
            knobs: Some(knobs),
        }
    }

    /// The cell a row ran by its scenario and name alone, whatever its knobs.
    pub fn by_name(r: &Row) -> CellKey {
        CellKey {
            scenario: r.scenario.clone(),
            cell: r.cell.clone(),
            knobs: None,
        }
    }

    /// The identity knobs by flag name, with their values as the row records them; None when
    /// the key pairs cells by name alone.
    pub fn knobs(&self) -> Option<impl Iterator<Item = (&'static str, &str)> + '_> {
        self.knobs.as_ref().map(KnobValues::iter)
    }
}

impl Ord for CellKey {
    /// By scenario, then name, then knob by knob (a key by name alone first).
    fn cmp(&self, other: &CellKey) -> Ordering {
        let knobs = match (&self.knobs, &other.knobs) {
            (Some(a), Some(b)) => a.iter().cmp(b.iter()),
            (a, b) => a.is_some().cmp(&b.is_some()),
        };
        (&self.scenario, &self.cell)
            .cmp(&(&other.scenario, &other.cell))
            .then(knobs)
    }
}

impl PartialOrd for CellKey {
    fn partial_cmp(&self, other: &CellKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An optional knob as a row records it: its value, or the word for its absence.
struct Or<'a, T>(&'a Option<T>, &'static str);

impl<T: Display> Display for Or<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str(self.1),
        }
    }
}

/// Calls `f` with each knob that makes a cell what it is (those the knob declaration gives the
/// identity role), by its flag name, as a row records it (written by `Display`, so keying a
/// million rows allocates no text per knob). A test holds it to the declaration.
fn each_knob(r: &Row, f: &mut dyn FnMut(&'static str, &dyn Display)) {
    f("loader", &r.loader);
    f("runtime", &r.runtime);
    f("strategy", &r.strategy);
    f("torch", &r.torch);
    f("workers", &r.workers);
    f("prefetch", &r.prefetch);
    f("batch", &r.batch);
    f("shape", &r.shape);
    f("dtype", &r.dtype);
    f("shm-size", &Or(&r.shm_bytes, "default"));
    f("ipc", &r.ipc);
    f("memory", &Or(&r.memory_bytes, "default"));
    f("shm-tmpfs", &r.shm_tmpfs);
    f("pin-memory", &r.pin_memory);
    f("touch", &r.touch);
    f("compute-ms", &r.compute_ms);
    f("decode-us", &r.decode_us);
    f("main-us", &r.main_us);
    f("retain-every", &r.retain_every);
    f("steps", &r.steps);
    f("epochs", &r.epochs);
    f("cpus", &Or(&r.cpus, "any"));
    f("nofile", &Or(&r.nofile, "default"));
    f("kernel", &Or(&r.vm_kernel, "host"));
    f("shm-remount", &Or(&r.shm_remount_bytes, "default"));
    f("container", &r.container);
    f("persistent-workers", &r.persistent_workers);
    // A VM's size and how it ran (the accelerator a guest got, not `auto`); none elsewhere.
    f("vm-memory", &Or(&r.vm_memory_bytes, "none"));
    f("vm-cpus", &Or(&r.vm_cpus, "none"));
    f("accel", &Or(&r.vm_accel, "none"));
    // A watched job is its command (and the image it ran in).
    f("command", &Or(&r.watched_command, ""));
    f("image", &Or(&r.image, ""));
    // The knobs added after schema 5, each in its own column.
    r.added.each_identity(f);
}

/// The knobs that make a cell what it is, by their flag names, as a row records them.
pub fn knobs(r: &Row) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    each_knob(r, &mut |name, value| out.push((name, value.to_string())));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::knobs::{Knobs, Role};

    /// What the cell key shows beside the knobs: a watched job's command.
    const NOT_KNOBS: &[&str] = &["command"];

    fn seed_row() -> Row {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        results::csv::read(std::path::Path::new(path)).unwrap()[0].clone()
    }

    #[test]
    fn the_identity_is_every_knob_the_declaration_says_makes_a_cell() {
        let keyed: Vec<String> = knobs(&seed_row())
            .into_iter()
            .map(|(name, _)| name.to_string())
            .filter(|name| !NOT_KNOBS.contains(&name.as_str()))
            .collect();
        let declared: Vec<String> = Knobs::SPECS
            .iter()
            .filter(|spec| spec.role == Role::Identity)
            .map(|spec| Knobs::flag_name(spec.key).to_string())
            .collect();
        let missing: Vec<&String> = declared.iter().filter(|k| !keyed.contains(k)).collect();
        let extra: Vec<&String> = keyed.iter().filter(|k| !declared.contains(k)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "declared with the identity role but not in the cell key (each_knob): {missing:?}; \
             in the cell key but not declared so: {extra:?}"
        );
    }

    #[test]
    fn a_key_holds_each_knob_apart_and_orders_knob_by_knob() {
        let row = seed_row();
        let key = CellKey::of(&row);
        let pairs: Vec<(&str, String)> = key.knobs().unwrap().map(|(n, v)| (n, v.into())).collect();
        assert_eq!(pairs, knobs(&row));
        // Values that run together differently are different keys.
        let mut more = row.clone();
        more.workers = 81;
        more.prefetch = 2;
        let mut fewer = row.clone();
        fewer.workers = 8;
        fewer.prefetch = 12;
        assert_ne!(CellKey::of(&more), CellKey::of(&fewer));
        assert!(CellKey::of(&fewer) < CellKey::of(&more));
        // Along the /dev/shm size, two sizes are one cell; by name, any knobs are.
        let mut bigger = row.clone();
        bigger.shm_bytes = Some(1 << 40);
        assert_ne!(CellKey::of(&row), CellKey::of(&bigger));
        let along = Some(Varying::Shm);
        assert_eq!(
            CellKey::except(&row, along),
            CellKey::except(&bigger, along)
        );
        assert_eq!(CellKey::by_name(&more), CellKey::by_name(&fewer));
        assert!(CellKey::by_name(&row).knobs().is_none());
        assert!(CellKey::by_name(&row) < CellKey::of(&row));
    }
}
