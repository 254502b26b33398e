//! A closed set of values, each named as its flag takes it: runtimes, strategies, formats,
//! fields. Declared once with [`choice!`](crate::choice), which gives the enum its names, its
//! help, `Display` and `FromStr`, so flags, scenarios, CSV cells, tables and errors all spell a
//! value the same way. The command line offers the values through its own parser
//! (`cli::choice`): no crate below it knows clap.

use crate::bad_value::BadValue;

/// A closed set of named values.
pub trait Choice: Copy + PartialEq + 'static {
    /// Every value, in the order help lists them.
    const ALL: &'static [Self];
    /// Its name, as flags, scenarios, CSV cells and tables spell it.
    fn name(self) -> &'static str;
    /// Other spellings a flag accepts for it.
    fn aliases(self) -> &'static [&'static str];
    /// What it means, one paragraph, for help.
    fn help(self) -> &'static str;
    /// Whether a user may give it (false: a value only shmbench itself sets).
    fn offered(self) -> bool;

    /// The value a user gave by its name or an alias.
    fn parse(text: &str) -> Result<Self, BadValue> {
        Self::ALL
            .iter()
            .copied()
            .filter(|v| v.offered())
            .find(|v| v.name() == text || v.aliases().contains(&text))
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL
                    .iter()
                    .filter(|v| v.offered())
                    .map(|v| v.name())
                    .collect();
                BadValue::new(text, format!("one of {}", names.join(", ")))
            })
    }
}

/// Declares a [`Choice`] enum: each variant's attributes, then `Name = "name"`, its aliases
/// (`| "alias"`), `: "help"` where it needs one (its doc comment and its help), and `hidden` for
/// a value only shmbench sets. The enum keeps the derives it is given; `Display` and `FromStr` come with it.
#[macro_export]
macro_rules! choice {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $value:literal $(| $alias:literal)* $(: $help:literal)? $($hidden:ident)?,
            )*
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[$vmeta])*
                $(#[doc = $help])?
                $variant,
            )*
        }

        impl $crate::choice::Choice for $name {
            const ALL: &'static [Self] = &[$($name::$variant),*];

            fn name(self) -> &'static str {
                match self { $($name::$variant => $value,)* }
            }

            fn aliases(self) -> &'static [&'static str] {
                match self { $($name::$variant => &[$($alias),*],)* }
            }

            fn help(self) -> &'static str {
                match self { $($name::$variant => concat!($($help)?),)* }
            }

            fn offered(self) -> bool {
                match self { $($name::$variant => stringify!($($hidden)?).is_empty(),)* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::choice::Choice::name(*self))
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::bad_value::BadValue;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                <$name as $crate::choice::Choice>::parse(text)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Choice;

    crate::choice! {
        #[derive(Clone, Copy, Debug, PartialEq)]
        enum Fruit {
            Apple = "apple" | "malus": "A pome.",
            Pear = "pear": "Another.",
            Seed = "seed": "Only the harness plants it." hidden,
        }
    }

    #[test]
    fn names_aliases_and_hidden_values_parse_as_declared() {
        assert_eq!("apple".parse::<Fruit>(), Ok(Fruit::Apple));
        assert_eq!("malus".parse::<Fruit>(), Ok(Fruit::Apple));
        assert_eq!(Fruit::Pear.to_string(), "pear");
        assert_eq!(Fruit::Seed.to_string(), "seed");
        let refused = "seed".parse::<Fruit>().unwrap_err();
        assert_eq!(refused.to_string(), "'seed' is not one of apple, pear");
        assert!(!Fruit::Seed.offered() && Fruit::Apple.offered());
        assert_eq!(Fruit::Apple.help(), "A pome.");
    }
}
