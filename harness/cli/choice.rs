//! The command line's side of the model's closed sets ([`Choice`]): a clap value parser that
//! offers each value with its help and takes its aliases, so `--help` lists the values and a
//! wrong one is refused in clap's words, with the values it could have been. The crates below
//! declare their sets without knowing clap.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use crate::model::choice::Choice;
use crate::model::knob_decl::Offer;

/// The values `offers` lists, as clap shows them.
pub(crate) fn possible(offers: &[Offer]) -> Vec<PossibleValue> {
    offers
        .iter()
        .map(|o| {
            let value = PossibleValue::new(o.name).aliases(o.aliases.iter().copied());
            // As clap words a doc comment: no closing period.
            let help = o.help.strip_suffix('.').unwrap_or(o.help);
            if help.is_empty() {
                value
            } else {
                value.help(help)
            }
        })
        .collect()
}

/// A value parser for `T`: `#[arg(long, value_parser = choice::<T>())]`.
pub(crate) fn choice<T: Choice + Send + Sync>() -> impl TypedValueParser<Value = T> {
    let offers = crate::model::knob_decl::offers::<T>();
    PossibleValuesParser::new(possible(&offers)).map(|name| {
        // The parser hands back the canonical name of a value it offered.
        T::parse(&name).expect("a value clap accepted is one of the set")
    })
}
