//! [`names!`](crate::names): the names of a small enum, declared once, for the command line,
//! results and error messages.

/// Gives a fieldless enum its names, once: `ALL` (every value, in the order the command line
/// lists them), `as_str`, `Display`, and `FromStr` whose error type (declared here) names
/// what was given and every valid name.
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// enum Colour { Red, DeepBlue }
/// strategies::names!(Colour, UnknownColour, "colour", "colours" {
///     Red = "red",
///     DeepBlue = "deep-blue",
/// });
/// assert_eq!(Colour::ALL, [Colour::Red, Colour::DeepBlue]);
/// assert_eq!("deep-blue".parse::<Colour>(), Ok(Colour::DeepBlue));
/// let error = "green".parse::<Colour>().unwrap_err();
/// assert_eq!(error.to_string(), "unknown colour `green`; valid colours: red, deep-blue");
/// ```
#[macro_export]
macro_rules! names {
    ($enum:ident, $error:ident, $what:literal, $plural:literal {
        $($variant:ident = $name:literal,)+
    }) => {
        impl $enum {
            /// Every value, in the order the command line lists them.
            pub const ALL: [$enum; [$($name),+].len()] = [$($enum::$variant),+];

            /// The name used on the command line and in results.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($enum::$variant => $name,)+
                }
            }
        }

        impl ::core::fmt::Display for $enum {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        #[doc = concat!("A name that names no ", $what, ".")]
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $error {
            /// What was given.
            pub given: ::std::string::String,
        }

        impl ::core::fmt::Display for $error {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                write!(f, concat!("unknown ", $what, " `{}`; valid ", $plural, ": "), self.given)?;
                f.write_str(concat!($($name, ", "),+).trim_end_matches(", "))
            }
        }

        impl ::std::error::Error for $error {}

        impl ::core::str::FromStr for $enum {
            type Err = $error;

            fn from_str(given: &str) -> ::core::result::Result<Self, Self::Err> {
                Self::ALL
                    .into_iter()
                    .find(|value| value.as_str() == given)
                    .ok_or_else(|| $error { given: given.to_owned() })
            }
        }
    };
}
