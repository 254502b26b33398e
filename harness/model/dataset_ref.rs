//! A user's own Dataset named for a torch cell (`dataset`): `FILE.py:NAME`, a Dataset (or a
//! function returning one) in a Python file, or a pickle file of one (the wheel's
//! `shmbench.tune(loader)` writes it). The cell's program loads it; here it is only checked, so
//! that a typo is an error before any cell starts, not a failed trial.

use std::path::Path;

/// What the text names.
#[derive(Debug, PartialEq, Eq)]
pub enum DatasetRef<'a> {
    /// `NAME` in the Python file `file`.
    Module { file: &'a Path, name: &'a str },
    /// A pickled Dataset.
    Pickle(&'a Path),
}

/// Reads `text`: `FILE.py:NAME` (the last `:` splits, a file name may hold one), else a pickle's
/// path.
pub fn parse(text: &str) -> Result<DatasetRef<'_>, String> {
    if let Some((file, name)) = text.rsplit_once(':').filter(|(f, _)| f.ends_with(".py")) {
        let identifier = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !identifier {
            return Err(format!(
                "{text}: after FILE.py: comes a Python name in it (a Dataset or a function returning one), e.g. data.py:train_set"
            ));
        }
        return Ok(DatasetRef::Module {
            file: Path::new(file),
            name,
        });
    }
    if text.ends_with(".py") {
        return Err(format!(
            "{text}: name the Dataset in it, FILE.py:NAME (a Dataset or a function returning one)"
        ));
    }
    Ok(DatasetRef::Pickle(Path::new(text)))
}

/// Whether `text` names a file that is there.
pub fn check(text: &str) -> Result<(), String> {
    let file = match parse(text)? {
        DatasetRef::Module { file, .. } => file,
        DatasetRef::Pickle(file) => file,
    };
    match std::fs::metadata(file) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(format!("{}: not a file", file.display())),
        Err(e) => Err(format!(
            "{}: {e} (FILE.py:NAME, or a pickled Dataset's file)",
            file.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_and_name_or_a_pickle() {
        assert_eq!(
            parse("dir:x/data.py:train_set"),
            Ok(DatasetRef::Module {
                file: Path::new("dir:x/data.py"),
                name: "train_set"
            })
        );
        assert_eq!(
            parse("/tmp/ds.pkl"),
            Ok(DatasetRef::Pickle(Path::new("/tmp/ds.pkl")))
        );
        assert!(parse("data.py").unwrap_err().contains("FILE.py:NAME"));
        assert!(parse("data.py:train set").is_err());
        assert!(parse("data.py:").is_err());
        assert!(check("/nonexistent/data.py:ds")
            .unwrap_err()
            .contains("/nonexistent/data.py"));
        assert!(check("/tmp").unwrap_err().contains("not a file"));
    }
}
