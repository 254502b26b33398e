//! Plain types every layer shares: the knobs, a resolved cell config and its validation, the
//! record a cell prints, byte sizes, a calibration. No I/O here.

/// Serialises a type as its `Display` text and reads it back through `FromStr`, so scenarios,
/// cell configs and CSV cells all spell it the way its flag does.
macro_rules! serde_as_text {
    ($($ty:ty),*) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <String as serde::Deserialize>::deserialize(d)?
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
    )*};
}

pub(crate) mod bad_value;
pub(crate) mod bench;
pub(crate) mod calibration;
pub(crate) mod claim;
pub mod config;
pub(crate) mod cpus;
pub(crate) mod estimate;
pub(crate) mod fingerprint;
pub(crate) mod job;
pub(crate) mod knob_decl;
pub(crate) mod knob_types;
pub mod knobs;
pub(crate) mod kube_quantity;
pub(crate) mod name;
pub(crate) mod pod;
pub mod record;
pub(crate) mod repeat;
pub(crate) mod segment_maker;
pub(crate) mod shm_audit;
pub(crate) mod shm_owner;
pub mod size;
pub(crate) mod slurm;
pub(crate) mod statement;
pub(crate) mod validate;
pub(crate) mod vm;
pub(crate) mod watch;
pub(crate) mod workload;
pub mod yaml_json;
