//! A whole training job as the doctor sees it: ranks per node (processes, each with its own
//! loaders, as DDP starts them) and the loaders each rank runs at once (a training loader and a
//! validation loader beside it), written `train:8x2x128,val:4x2x256` (name:workers x prefetch x
//! batch), each with the tensors its own Dataset holds when they differ from the job's
//! `--dataset-bytes` (`train:8x2x128+2g`: what forkserver and spawn pickle to its workers).

use super::bad_value::BadValue;
use super::size::ByteSize;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// One loader of a rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoaderSpec {
    pub name: String,
    pub workers: u32,
    pub prefetch: u32,
    pub batch: u32,
    /// Bytes of tensors this loader's Dataset holds (`+SIZE`); None: the job's `dataset-bytes`.
    pub dataset_bytes: Option<u64>,
}

impl FromStr for LoaderSpec {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<Self, BadValue> {
        let bad = || {
            BadValue::new(
                s,
                "a loader: write NAME:WORKERSxPREFETCHxBATCH[+DATASET], e.g. train:8x2x128 or train:8x2x128+2g",
            )
        };
        let (name, shape) = s.split_once(':').ok_or_else(bad)?;
        let (shape, dataset_bytes) = match shape.split_once('+') {
            Some((shape, size)) => (
                shape,
                Some(
                    ByteSize::parse(size)
                        .map_err(|e| BadValue::new(s, format!("a loader's Dataset size: {e}")))?
                        .bytes(),
                ),
            ),
            None => (shape, None),
        };
        let numbers: Vec<u32> = shape
            .split(['x', 'X'])
            .map(|n| n.trim().parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        let name = name.trim();
        match numbers[..] {
            [workers, prefetch, batch]
                if !name.is_empty() && workers > 0 && prefetch > 0 && batch > 0 =>
            {
                Ok(LoaderSpec {
                    name: name.to_string(),
                    workers,
                    prefetch,
                    batch,
                    dataset_bytes,
                })
            }
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for LoaderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}x{}x{}",
            self.name, self.workers, self.prefetch, self.batch
        )?;
        match self.dataset_bytes {
            Some(bytes) => write!(f, "+{}", ByteSize(bytes)),
            None => Ok(()),
        }
    }
}

/// `--loaders`: several loaders, comma-separated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoaderList(pub Vec<LoaderSpec>);

impl FromStr for LoaderList {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<Self, BadValue> {
        let specs: Vec<LoaderSpec> = s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        if specs.is_empty() {
            return Err(BadValue::new(
                s,
                "a list of loaders: name at least one, e.g. train:8x2x128",
            ));
        }
        let mut names: Vec<&str> = specs.iter().map(|l| l.name.as_str()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err(BadValue::new(
                s,
                "a list of loaders: it names one twice; give each its own name",
            ));
        }
        Ok(LoaderList(specs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaders_are_written_name_workers_prefetch_batch() {
        let list: LoaderList = "train:8x2x128, val:4x2x256".parse().unwrap();
        assert_eq!(list.0.len(), 2);
        assert_eq!(list.0[1].to_string(), "val:4x2x256");
        assert_eq!(list.0[1].dataset_bytes, None);
        let held: LoaderList = "train:2x2x8+256m".parse().unwrap();
        assert_eq!(held.0[0].dataset_bytes, Some(256 << 20));
        assert_eq!(held.0[0].to_string(), "train:2x2x8+256 MiB");
        assert_eq!(
            held.0[0].to_string().parse::<LoaderSpec>().unwrap(),
            held.0[0]
        );
        for bad in [
            "train",
            "train:8x2",
            ":1x1x1",
            "t:0x2x8",
            "a:1x1x1,a:2x2x2",
            "t:1x1x1+lots",
            "",
        ] {
            assert!(bad.parse::<LoaderList>().is_err(), "{bad}");
        }
    }
}
