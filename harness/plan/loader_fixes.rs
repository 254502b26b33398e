//! The loader's own knobs changed to fit the /dev/shm there is: the largest prefetch_factor,
//! num_workers or batch_size below the loader's whose peak fits (each alone), and pin_memory.
//! The doctor offers them beside the environment's fixes, in the loader's own units.

use super::fixes::Fix;
use super::predict;
use model::config::CellConfig;
use model::size::ByteSize;

/// The largest value in `1..current` for which `fits(value)`, if any, by bisection: the peak
/// grows with each knob, so `fits` holds up to a value and not above it. A walk down from
/// `current` cost one prediction per value, and a batch given in bytes (the pre-flight's, once)
/// made that millions of them: seconds. Bisection asks about log2(current) times.
fn largest_below(current: u64, fits: impl Fn(u64) -> bool) -> Option<u64> {
    if current <= 1 || !fits(1) {
        return None;
    }
    // fits(lo) holds; every value from hi up is out (`current` itself, or found not to fit).
    let (mut lo, mut hi) = (1, current);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match fits(mid) {
            true => lo = mid,
            false => hi = mid,
        }
    }
    Some(lo)
}

/// The loader's own knobs, each changed alone, that fit its peak in `capacity`.
pub fn loader_changes(config: &CellConfig, capacity: u64) -> Fix {
    let peak_of = predict::peak_bytes;
    let changed = |change: &dyn Fn(&mut CellConfig)| {
        let mut c = config.clone();
        change(&mut c);
        c
    };
    let mut changes = Vec::new();
    let mut try_knob = |name: &str, current: u64, set: &dyn Fn(&mut CellConfig, u64)| {
        let fitting = largest_below(current, |v| peak_of(&changed(&|c| set(c, v))) <= capacity);
        if let Some(v) = fitting {
            let peak = peak_of(&changed(&|c| set(c, v)));
            changes.push(format!("{name}={v} (peak {})", ByteSize(peak)));
        }
    };
    try_knob("prefetch_factor", config.knobs.prefetch as u64, &|c, v| {
        c.knobs.prefetch = v as u32
    });
    try_knob("num_workers", config.knobs.workers as u64, &|c, v| {
        c.knobs.workers = v as u32
    });
    try_knob("batch_size", config.knobs.batch as u64, &|c, v| {
        c.knobs.batch = v as u32
    });
    let pinned = changed(&|c| c.knobs.pin_memory = true);
    if !config.knobs.pin_memory && peak_of(&pinned) <= capacity {
        changes.push(format!(
            "pin_memory=True (peak about {}: waiting batches move to pinned memory)",
            ByteSize(peak_of(&pinned))
        ));
    }
    if changes.is_empty() {
        changes.push("none fits alone: no smaller prefetch_factor, num_workers or batch_size makes the peak fit; the environment must change".into());
    }
    Fix {
        title: format!(
            "Or change the loader to fit the {} there is (each alone)",
            ByteSize(capacity)
        ),
        commands: changes,
    }
}

#[cfg(test)]
mod tests {
    use super::largest_below;
    use std::cell::Cell;

    #[test]
    fn the_largest_fitting_value_is_found_in_logarithmic_asks() {
        for (current, limit) in [
            (128, 64),
            (128, 127),
            (128, 1),
            (2, 1),
            (1_000_000, 999_998),
        ] {
            assert_eq!(largest_below(current, |v| v <= limit), Some(limit));
        }
        assert_eq!(largest_below(128, |v| v < 1), None);
        assert_eq!(largest_below(1, |_| true), None);
        assert_eq!(largest_below(128, |_| true), Some(127));
        // A batch of millions (the pre-flight once gave one in bytes): a few dozen asks.
        let asks = Cell::new(0u32);
        let found = largest_below(u32::MAX as u64, |v| {
            asks.set(asks.get() + 1);
            v <= 3_000_000
        });
        assert_eq!(found, Some(3_000_000));
        assert!(asks.get() <= 40, "{} asks", asks.get());
    }
}
