//! The command line's help, as a user first meets it: touches no machine state, so it runs in
//! `cargo xtask fast` too.

use crate::common;

use common::*;

/// Every subcommand `shmbench --help` lists, read from that list (so a new one is held to it
/// without a change here), shows examples after its flags.
#[test]
fn every_subcommand_s_help_has_examples() {
    let top = shmbench(&["--help"]);
    let text = String::from_utf8_lossy(&top.stdout).into_owned();
    assert!(top.status.success() && text.contains("Examples:"), "{text}");
    let list = text
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("a Commands: list");
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(names.len() > 20, "{names:?}");
    for name in names {
        let o = shmbench(&[name, "--help"]);
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && help.contains("Examples:"),
            "`shmbench {name} --help` shows no examples: {help}"
        );
    }
}
