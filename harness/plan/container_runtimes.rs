//! `matrix --engines a,b --oci-runtimes x,y`: every cell under each container engine and OCI
//! runtime, interleaved into one run (cell 1 under each, then cell 2, ...), so a slow hour of the
//! machine falls on every runtime alike. The engine and runtime are knobs of the cell (its
//! identity, its columns), set before the cell is resolved: a cell with them runs in a container.

use anyhow::{anyhow, Result};

use model::config::CellConfig;
use model::knobs::{EngineKind, Knobs, OciRuntime};

/// The knob layers, one per engine x OCI runtime (`None`: the overrides' own, else the default).
pub fn layers(engines: Option<&[EngineKind]>, ocis: Option<&[OciRuntime]>) -> Vec<Knobs> {
    // Each named once, in the order given: a name twice would run its cells twice as if apart.
    fn once<T: Clone + PartialEq>(list: Option<&[T]>) -> Vec<Option<T>> {
        let Some(list) = list else { return vec![None] };
        let mut out: Vec<Option<T>> = Vec::new();
        for item in list {
            if !out.iter().any(|o| o.as_ref() == Some(item)) {
                out.push(Some(item.clone()));
            }
        }
        out
    }
    let (engines, ocis) = (once(engines), once(ocis));
    let mut out = Vec::new();
    for engine in &engines {
        for oci in &ocis {
            out.push(Knobs {
                engine: *engine,
                oci_runtime: oci.clone(),
                ..Knobs::default()
            });
        }
    }
    out
}

/// Plans `plan(layer)` for every layer and interleaves the plans cell by cell; an error names
/// the engine and runtime that could not take the cell.
pub fn interleaved(
    layers: &[Knobs],
    mut plan: impl FnMut(&Knobs) -> Result<Vec<CellConfig>>,
) -> Result<Vec<CellConfig>> {
    let mut plans = Vec::new();
    for layer in layers {
        let planned = plan(layer).map_err(|e| {
            let engine = layer.engine.map_or("default".into(), |e| e.to_string());
            let oci = layer.oci_runtime.clone().unwrap_or_default();
            anyhow!("--engines/--oci-runtimes: engine {engine}, oci-runtime {oci}: {e:#}")
        })?;
        plans.push(planned);
    }
    let cells = plans.first().map_or(0, Vec::len);
    let mut out = Vec::with_capacity(cells * plans.len());
    for i in 0..cells {
        for planned in &plans {
            out.extend(planned.get(i).cloned());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::{Identity, Platform, Resolve};

    #[test]
    fn every_engine_meets_every_runtime_and_cells_interleave() {
        let runsc: OciRuntime = "runsc".parse().unwrap();
        let layers = layers(
            Some(&[EngineKind::Docker, EngineKind::Podman]),
            Some(&[OciRuntime::default(), runsc.clone()]),
        );
        assert_eq!(layers.len(), 4);
        assert_eq!(layers[3].engine, Some(EngineKind::Podman));
        assert_eq!(layers[3].oci_runtime, Some(runsc));
        let cell = |name: &str, layer: &Knobs| {
            let id = Identity {
                cell: name.to_string(),
                ..Identity::default()
            };
            layer
                .resolve(id, &Platform::fixed(24 << 30, false))
                .unwrap()
        };
        let out = interleaved(&layers, |layer| {
            Ok(vec![cell("a", layer), cell("b", layer)])
        })
        .unwrap();
        let names: Vec<&str> = out.iter().map(|c| c.cell.as_str()).collect();
        assert_eq!(names, ["a", "a", "a", "a", "b", "b", "b", "b"]);
        assert_eq!(out[2].knobs.engine, EngineKind::Podman);
    }

    #[test]
    fn without_the_flags_the_plan_is_the_cells_once_and_a_name_given_twice_counts_once() {
        assert_eq!(layers(None, None).len(), 1);
        let runc: OciRuntime = "runc".parse().unwrap();
        let twice = layers(Some(&[EngineKind::Podman; 2]), Some(&[runc.clone(), runc]));
        assert_eq!(twice.len(), 1);
    }
}
