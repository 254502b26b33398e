//! The knobs as flags: one `--flag` per knob of the model's declaration (`Knobs::FLAGS`), built
//! here so the model declares its knobs without knowing clap. A flag's value is checked as clap
//! parses it (clap's words, the knob's own reason) and set through `Knobs::set`.

use std::ops::{Deref, DerefMut};

use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

use super::choice::possible;
use crate::model::knob_decl::{KnobFlag, Takes};
use crate::model::knobs::Knobs;

/// The knobs a command line gave, every other one unset: `#[command(flatten)]` it.
#[derive(Clone, Debug, Default)]
pub(crate) struct KnobFlags(pub(crate) Knobs);

impl Deref for KnobFlags {
    type Target = Knobs;
    fn deref(&self) -> &Knobs {
        &self.0
    }
}

impl DerefMut for KnobFlags {
    fn deref_mut(&mut self) -> &mut Knobs {
        &mut self.0
    }
}

/// A knob's flag, as clap takes it: `--shm-size <SIZE>`.
fn arg(flag: &'static KnobFlag) -> Arg {
    let long = Knobs::flag_name(flag.key);
    let arg = Arg::new(flag.key)
        .long(long)
        .help(flag.help)
        .value_name(flag.value_name)
        .action(ArgAction::Set);
    let arg = match flag.takes {
        Takes::Choice(offers) => {
            return arg.value_parser(PossibleValuesParser::new(possible(&offers())));
        }
        Takes::Switch => arg.num_args(0..=1).default_missing_value("true"),
        Takes::Size => arg.allow_hyphen_values(true),
        Takes::Text => arg,
    };
    let check = flag.check;
    arg.value_parser(move |text: &str| check(text).map(|()| text.to_string()))
}

impl Args for KnobFlags {
    fn augment_args(command: Command) -> Command {
        Knobs::FLAGS
            .iter()
            .fold(command, |command, flag| command.arg(arg(flag)))
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl FromArgMatches for KnobFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = KnobFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for flag in Knobs::FLAGS {
            if let Some(text) = matches.get_one::<String>(flag.key) {
                // Checked as clap parsed it: a failure here is a knob that checks differently
                // from how it sets, said as clap says a bad value.
                self.0.set(flag.key, text).map_err(|why| {
                    clap::Error::raw(
                        clap::error::ErrorKind::ValueValidation,
                        format!(
                            "invalid value '{text}' for '--{}': {why}\n",
                            Knobs::flag_name(flag.key)
                        ),
                    )
                })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::KnobFlags;
    use crate::model::knobs::Strategy;
    use crate::model::size::ByteSize;

    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        knobs: KnobFlags,
    }

    fn parse(args: &[&str]) -> Result<KnobFlags, clap::Error> {
        Line::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|l| l.knobs)
    }

    #[test]
    fn each_kind_of_knob_flag_sets_its_knob_and_the_rest_stay_unset() {
        let k = parse(&[
            "--workers",
            "3",
            "--strategy",
            "file_system",
            "--shm-size",
            "64m",
            "--shm-tmpfs",
        ])
        .unwrap();
        assert_eq!(k.workers, Some(3));
        assert_eq!(k.strategy, Some(Strategy::FileSystem));
        assert_eq!(k.shm_size, Some(ByteSize(64 << 20)));
        assert_eq!(k.shm_tmpfs, Some(true));
        assert_eq!(k.batch, None);
        assert_eq!(
            parse(&["--shm-tmpfs", "no"]).unwrap().shm_tmpfs,
            Some(false)
        );
    }

    #[test]
    fn a_bad_value_is_refused_in_clap_s_words_with_the_knob_s_reason() {
        let words = |args: &[&str]| parse(args).err().unwrap().to_string();
        let size = words(&["--shm-size", "-1g"]);
        assert!(
            size.contains("invalid value '-1g' for '--shm-size <SIZE>'"),
            "{size}"
        );
        assert!(size.contains("is not a size"), "{size}");
        let choice = words(&["--strategy", "fd"]);
        assert!(
            choice.contains("[possible values: file_descriptor, file_system"),
            "{choice}"
        );
        let switch = words(&["--shm-tmpfs", "maybe"]);
        assert!(switch.contains("'maybe' is not true or false"), "{switch}");
    }
}
