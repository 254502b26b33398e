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

pub mod bad_value;
pub mod calibration;
pub mod choice;
pub mod claim;
pub mod config;
pub mod cpus;
pub mod dataset_ref;
pub mod estimate;
pub mod fingerprint;
pub mod job;
pub mod knob_decl;
pub mod knob_types;
pub mod knobs;
pub mod kube_quantity;
pub mod name;
pub mod pod;
pub mod record;
pub mod repeat;
pub mod segment_maker;
pub mod size;
pub mod slurm_task;
pub mod statement;
pub mod validate;
pub mod vm;
pub mod watch;
