//! CSV cells that a spreadsheet would run as a formula are written safely: a cell that starts
//! with `=`, `+`, `-`, `@`, a tab or a carriage return, and is not a plain number, gets a leading
//! `'` (OWASP's rule for CSV injection; spreadsheets show the text and run nothing). Values come
//! from elsewhere (a pod's log, a command line, a user's scenario), so a message like
//! `=cmd|' /C calc'!A0` must stay text. shmbench reads its own files back through [`unguard`],
//! so the guard is invisible to every command; the rule is part of the CSV contract
//! (results/README.md).

/// The first characters that make a spreadsheet read a cell as a formula.
const TRIGGERS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Whether `cell` gets the guard: it would run as a formula, or it is itself a guarded-looking
/// cell (a quote before one that would), so that reading it back gives it unchanged.
fn needs_guard(cell: &str) -> bool {
    (cell.starts_with(TRIGGERS) && cell.parse::<f64>().is_err())
        || cell.strip_prefix('\'').is_some_and(needs_guard)
}

/// `cell` as written to a CSV file.
pub fn guard(cell: &str) -> std::borrow::Cow<'_, str> {
    if needs_guard(cell) {
        format!("'{cell}").into()
    } else {
        cell.into()
    }
}

/// A CSV cell as it was before [`guard`].
pub fn unguard(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if needs_guard(rest) => rest,
        _ => cell,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_quoted_and_numbers_and_text_are_not() {
        assert_eq!(guard("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(guard("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(guard("+1+2"), "'+1+2");
        assert_eq!(guard("-3.5"), "-3.5");
        assert_eq!(guard("1e-3"), "1e-3");
        assert_eq!(guard("sigbus"), "sigbus");
        assert_eq!(guard(""), "");
    }

    #[test]
    fn every_cell_survives_a_round_trip() {
        for cell in [
            "=1+1",
            "-x",
            "'=already",
            "'",
            "''",
            "'plain",
            "-2",
            "\tx",
            "text",
        ] {
            assert_eq!(unguard(&guard(cell)), cell, "{cell:?}");
        }
    }
}
