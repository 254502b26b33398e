//! A cell's key in words, the one place it is put so: `scenario/cell [loader=emulated
//! runtime=docker ...]` (every identity knob, `name=value`, in the declaration's order), or
//! `scenario/cell` for a key that pairs cells by name alone. It is the text `compare --format
//! json` carries as `key`.

use std::fmt;

use analysis::cell_key::CellKey;

/// A cell key, written as text by `Display`.
pub struct KeyText<'a>(pub &'a CellKey);

impl fmt::Display for KeyText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.0;
        write!(f, "{}/{}", key.scenario, key.cell)?;
        let Some(knobs) = key.knobs() else {
            return Ok(());
        };
        f.write_str(" [")?;
        for (i, (name, value)) in knobs.enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{name}={value}")?;
        }
        f.write_str("]")
    }
}

/// A cell key as text.
pub fn text(key: &CellKey) -> String {
    KeyText(key).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::cell_key::Varying;

    #[test]
    fn a_key_reads_as_it_always_has() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let row = results::csv::read(std::path::Path::new(path)).unwrap()[0].clone();
        assert_eq!(
            text(&CellKey::of(&row)),
            "seed-matrix/docker-default [loader=emulated runtime=docker strategy=file_descriptor \
             torch=legacy workers=8 prefetch=2 batch=128 shape=3x224x224 dtype=f32 \
             shm-size=default ipc=private memory=default shm-tmpfs=false pin-memory=false \
             touch=all compute-ms=0 decode-us=0 main-us=0 retain-every=0 steps=100 epochs=1 \
             cpus=any nofile=default kernel=host shm-remount=default container=docker \
             persistent-workers=true vm-memory=none vm-cpus=none accel=none command= image= \
             start-method=fork dataset-bytes=0 engine=docker inject=none oci-runtime=default]"
        );
        let along_shm = text(&CellKey::except(&row, Some(Varying::Shm)));
        assert!(
            along_shm.starts_with("seed-matrix/docker-default [loader=emulated strategy="),
            "{along_shm}"
        );
        assert!(!along_shm.contains("shm-size="), "{along_shm}");
        assert_eq!(text(&CellKey::by_name(&row)), "seed-matrix/docker-default");
    }
}
