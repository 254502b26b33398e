//! How the knobs are declared: the `knobs!` macro that [`super::knobs`] invokes once, and what
//! it states of each knob ([`KnobSpec`]: its key, its role in a cell's identity, its results
//! column), and the traits a row's added knob columns are written and read through.

use serde::Serialize;

use super::bad_value::BadValue;
use super::choice::Choice;
use super::cpus::CpuList;
use super::knob_types::{OciRuntime, Shape};
use super::size::ByteSize;

/// Why a knob's text is not a value of its kind (each kind says it in its own words).
pub type BadKnob = Box<dyn std::error::Error + Send + Sync>;

/// A knob's value read from its text, as a flag gives it.
pub trait KnobValue: Sized {
    /// What its flag takes.
    const TAKES: Takes = Takes::Text;
    fn from_text(text: &str) -> Result<Self, BadKnob>;
}

/// What a knob's flag takes.
#[derive(Clone, Copy)]
pub enum Takes {
    /// A value (`--workers 8`).
    Text,
    /// A size, which may be written negative, to be refused with why (`--shm-size -1g`).
    Size,
    /// A switch: bare for true, or `true`/`false`, `yes`/`no`, `1`/`0`, `on`/`off`.
    Switch,
    /// One of a closed set, offered with each value's help.
    Choice(fn() -> Vec<Offer>),
}

/// A value a [`Choice`] knob offers, for the command line's help and errors.
#[derive(Clone, Copy, Debug)]
pub struct Offer {
    pub name: &'static str,
    pub help: &'static str,
    pub aliases: &'static [&'static str],
}

/// The values `T` offers.
pub fn offers<T: Choice>() -> Vec<Offer> {
    T::ALL
        .iter()
        .filter(|v| v.offered())
        .map(|v| Offer {
            name: v.name(),
            help: v.help(),
            aliases: v.aliases(),
        })
        .collect()
}

impl<T: Choice> KnobValue for T {
    const TAKES: Takes = Takes::Choice(offers::<T>);
    fn from_text(text: &str) -> Result<T, BadKnob> {
        T::parse(text).map_err(Into::into)
    }
}

/// The knob types read by their own `FromStr`.
macro_rules! knob_value_from_str {
    ($($ty:ty),*) => {$(
        impl KnobValue for $ty {
            fn from_text(text: &str) -> Result<$ty, BadKnob> {
                text.parse::<$ty>().map_err(Into::into)
            }
        }
    )*};
}
knob_value_from_str!(u32, u64, f64, String, Shape, CpuList, OciRuntime);

impl KnobValue for ByteSize {
    const TAKES: Takes = Takes::Size;
    fn from_text(text: &str) -> Result<ByteSize, BadKnob> {
        text.parse::<ByteSize>().map_err(Into::into)
    }
}

impl KnobValue for bool {
    const TAKES: Takes = Takes::Switch;
    fn from_text(text: &str) -> Result<bool, BadKnob> {
        match text {
            "true" | "yes" | "1" | "on" => Ok(true),
            "false" | "no" | "0" | "off" => Ok(false),
            _ => Err(BadValue::new(text, "true or false").into()),
        }
    }
}

/// A knob as its flag is: the command line builds the flag from it, and gives the text back
/// through `Knobs::set`.
#[derive(Clone, Copy)]
pub struct KnobFlag {
    /// The scenario key (`shm_size`); the flag is it with dashes (`--shm-size`).
    pub key: &'static str,
    pub help: &'static str,
    pub value_name: &'static str,
    pub takes: Takes,
    /// Whether `text` is a value of the knob's kind, and why not.
    pub check: fn(&str) -> Result<(), BadKnob>,
}

/// What a knob is to a cell's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Two runs that differ in it are different cells (`compare`, `history`, `report` key on it).
    Identity,
    /// How a cell is run or watched, not what it runs; the text says why.
    Setting(&'static str),
}

/// One knob as the declaration states it: its scenario key, its role, and the results column
/// that records it (None: no column; what the row records instead is named in its role).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnobSpec {
    pub key: &'static str,
    pub role: Role,
    pub column: Option<&'static str>,
}

#[doc(hidden)]
macro_rules! knob_role {
    (identity) => {
        Role::Identity
    };
    (setting($why:literal)) => {
        Role::Setting($why)
    };
}

#[doc(hidden)]
macro_rules! knob_column {
    (none) => {
        None
    };
    ($column:ident) => {
        Some(stringify!($column))
    };
}

/// A resolved knob is its partial form's value (`u32`) or, for a knob that may stay unset, the
/// option itself (`Option<ByteSize>`): the declaration's `=> TYPE` says which.
pub trait Settle<T>: Sized {
    /// The resolved value, or None where a knob that must have one has none.
    fn settle(value: Option<T>) -> Option<Self>;
}

impl<T> Settle<T> for T {
    fn settle(value: Option<T>) -> Option<T> {
        value
    }
}

impl<T> Settle<T> for Option<T> {
    fn settle(value: Option<T>) -> Option<Option<T>> {
        Some(value)
    }
}

/// A size knob recorded as its bytes (`dataset-bytes`: `256m` given, 268435456 in a row and in
/// a cell's key).
impl Settle<ByteSize> for u64 {
    fn settle(value: Option<ByteSize>) -> Option<u64> {
        value.map(|size| size.bytes())
    }
}

/// Declares every knob once. Each entry is a scenario key and a CLI flag of the same name (its
/// partial type), the type it resolves to, its default, its role in a cell's identity, the
/// results column that records it, and its help text. From it come [`Knobs`] (scenario and
/// flags), [`KnobValues`] (a resolved cell's knobs, inside `CellConfig`), the resolution,
/// [`Knobs::SPECS`], which tests hold the identity list and the row's columns to, and
/// [`AddedKnobs`].
///
/// The knobs under `added` came after results schema 5: each is recorded in a column of its
/// own name at the end of a row ([`AddedKnobs`], written and read by name), and joins a cell's
/// identity by its role, so adding one touches this declaration and the code that uses it. A
/// knob added later must default to what ran before it existed: a record or row written before
/// it reads as that default.
macro_rules! knobs {
    ($(
        #[value_name = $value_name:literal]
        $field:ident : $ty:ty => $resolved:ty = $default:expr,
            $role:ident $(($why:literal))?, row $column:ident,
            $help:literal;
    )*
    @added {$(
        #[value_name = $avalue_name:literal]
        $afield:ident : $aty:ty => $aresolved:ty = $adefault:expr,
            $arole:ident $(($awhy:literal))?,
            $ahelp:literal;
    )*}) => {
        /// Partial loader/isolation settings; see the module docs for how layers combine.
        #[derive(Clone, Debug, Default, serde::Deserialize)]
        #[serde(rename_all = "kebab-case", deny_unknown_fields)]
        pub struct Knobs {
            $(
                #[doc = $help]
                pub $field: Option<$ty>,
            )*
            $(
                #[doc = $ahelp]
                pub $afield: Option<$aty>,
            )*
        }

        /// Every knob of a resolved cell. A record without a knob (written before it existed)
        /// reads as its default.
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(default)]
        pub struct KnobValues {
            $(
                #[doc = $help]
                pub $field: $resolved,
            )*
            $(
                #[doc = $ahelp]
                pub $afield: $aresolved,
            )*
        }

        /// The knobs added after results schema 5, as a row records them: one column each, named
        /// as the knob's key, after the schema's columns. A row without one reads as its default.
        #[derive(Clone, Debug, PartialEq)]
        pub struct AddedKnobs {
            $(
                #[doc = $ahelp]
                pub $afield: $aresolved,
            )*
        }

        impl Default for AddedKnobs {
            /// Every added knob at its default, what ran before it existed: what a row read
            /// from a file without their columns holds (built from the declaration's defaults
            /// alone, as every row read is).
            fn default() -> AddedKnobs {
                AddedKnobs {$(
                    $afield: <$aresolved as $crate::knob_decl::Settle<$aty>>::settle($adefault)
                        .expect(concat!("the knob ", stringify!($afield), " has a default")),
                )*}
            }
        }

        impl AddedKnobs {
            /// The added knobs of a resolved cell.
            #[allow(unused_variables)]
            pub fn of(values: &KnobValues) -> AddedKnobs {
                AddedKnobs { $( $afield: values.$afield.clone(), )* }
            }

            /// Their columns, in order.
            pub const COLUMNS: &'static [&'static str] = &[$( stringify!($afield) ),*];

            /// Hands each column and its value to `to`, in order.
            #[allow(unused_variables)]
            pub fn write(&self, to: &mut impl $crate::knob_decl::ColumnWriter) {
                $( to.column(stringify!($afield), &self.$afield); )*
            }

            /// Lets `from` set each column it has.
            #[allow(unused_variables)]
            pub fn read(&mut self, from: &mut impl $crate::knob_decl::ColumnReader) {
                $( from.column(stringify!($afield), &mut self.$afield); )*
            }

            /// Calls `f` with each added knob that makes a cell what it is, by its flag name.
            #[allow(unused_variables)]
            pub fn each_identity(&self, f: &mut dyn FnMut(&'static str, &dyn std::fmt::Display)) {
                $(
                    if $crate::knob_decl::knob_role!($arole $(($awhy))?) == $crate::knob_decl::Role::Identity {
                        // Keyed on every row read: the flag name is made once, not looked up.
                        static FLAG: std::sync::LazyLock<String> =
                            std::sync::LazyLock::new(|| stringify!($afield).replace('_', "-"));
                        let flag: &'static str = &FLAG;
                        f(flag, &self.$afield);
                    }
                )*
            }
        }

        impl Knobs {
            /// Values of `top` replace values of `self` where `top` has them.
            pub fn overlay(&mut self, top: &Knobs) {
                $( if top.$field.is_some() { self.$field = top.$field.clone(); } )*
                $( if top.$afield.is_some() { self.$afield = top.$afield.clone(); } )*
            }

            /// The scenario key names, for error messages that list what is allowed.
            pub const KEYS: &'static [&'static str] =
                &[$( stringify!($field), )* $( stringify!($afield), )*];

            /// A knob's flag name (`persistent-workers`) from its key (`persistent_workers`).
            pub fn flag_name(key: &'static str) -> &'static str {
                static FLAGS: std::sync::LazyLock<Vec<(&'static str, String)>> =
                    std::sync::LazyLock::new(|| {
                        Knobs::KEYS
                            .iter()
                            .map(|key| (*key, key.replace('_', "-")))
                            .collect()
                    });
                let flags: &'static [(&'static str, String)] = &FLAGS;
                flags
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or(key, |(_, flag)| flag.as_str())
            }

            /// Each knob as its flag is, in the declaration's order.
            pub const FLAGS: &'static [$crate::knob_decl::KnobFlag] = &[
                $(
                    $crate::knob_decl::KnobFlag {
                        key: stringify!($field),
                        help: $help,
                        value_name: $value_name,
                        takes: <$ty as $crate::knob_decl::KnobValue>::TAKES,
                        check: |text| <$ty as $crate::knob_decl::KnobValue>::from_text(text).map(drop),
                    },
                )*
                $(
                    $crate::knob_decl::KnobFlag {
                        key: stringify!($afield),
                        help: $ahelp,
                        value_name: $avalue_name,
                        takes: <$aty as $crate::knob_decl::KnobValue>::TAKES,
                        check: |text| <$aty as $crate::knob_decl::KnobValue>::from_text(text).map(drop),
                    },
                )*
            ];

            /// Sets the knob `key` (a scenario key) from its text, as a flag gives it.
            pub fn set(&mut self, key: &str, text: &str) -> Result<(), $crate::knob_decl::BadKnob> {
                match key {
                    $(
                        stringify!($field) => {
                            self.$field = Some(<$ty as $crate::knob_decl::KnobValue>::from_text(text)?);
                        }
                    )*
                    $(
                        stringify!($afield) => {
                            self.$afield = Some(<$aty as $crate::knob_decl::KnobValue>::from_text(text)?);
                        }
                    )*
                    _ => return Err($crate::bad_value::BadValue::new(key, "a knob").into()),
                }
                Ok(())
            }

            /// What the declaration says of each knob.
            pub const SPECS: &'static [$crate::knob_decl::KnobSpec] = &[
                $(
                    $crate::knob_decl::KnobSpec {
                        key: stringify!($field),
                        role: $crate::knob_decl::knob_role!($role $(($why))?),
                        column: $crate::knob_decl::knob_column!($column),
                    },
                )*
                $(
                    $crate::knob_decl::KnobSpec {
                        key: stringify!($afield),
                        role: $crate::knob_decl::knob_role!($arole $(($awhy))?),
                        column: Some(stringify!($afield)),
                    },
                )*
            ];

            /// Every knob at its default (the how-to's seed setup; `shm-size` and `memory` unset).
            pub fn defaults() -> Knobs {
                Knobs { $( $field: $default, )* $( $afield: $adefault, )* }
            }

            /// These knobs over the defaults, resolved: every knob that must have a value has one.
            pub fn settle(&self) -> KnobValues {
                let mut k = Knobs::defaults();
                k.overlay(self);
                KnobValues {
                    $(
                        $field: <$resolved as $crate::knob_decl::Settle<$ty>>::settle(k.$field)
                            .expect(concat!("the knob ", stringify!($field), " has a default")),
                    )*
                    $(
                        $afield: <$aresolved as $crate::knob_decl::Settle<$aty>>::settle(k.$afield)
                            .expect(concat!("the knob ", stringify!($afield), " has a default")),
                    )*
                }
            }
        }
    };
}
pub(crate) use knob_column;
pub(crate) use knob_role;
pub(crate) use knobs;

/// Where a row's added knob columns go as they are written: each column's name and value.
pub trait ColumnWriter {
    fn column<T: Serialize>(&mut self, name: &'static str, value: &T);
}

/// Where they come from as a row is read: sets `value` when the row has the column.
pub trait ColumnReader {
    fn column<T: serde::de::DeserializeOwned>(&mut self, name: &'static str, value: &mut T);
}
