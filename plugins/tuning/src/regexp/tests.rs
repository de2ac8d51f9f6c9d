use proptest::prelude::*;

use super::*;

fn m(pattern: &str, text: &str) -> bool {
    Regex::new(pattern)
        .unwrap_or_else(|e| panic!("{pattern}: {e}"))
        .is_match(text)
}

#[test]
fn allowlist_entries_of_the_reference_tests_match_as_go() {
    let conf = r"^net\.ipv4\.conf\.other\.[a-z_]*$";
    assert!(m(conf, "net.ipv4.conf.other.arp_filter"));
    assert!(!m(conf, "net.ipv4.conf.other.arp_filter2"));
    assert!(!m(conf, "net.ipv4.conf.all.arp_filter"));
    assert!(!m(conf, "xnet.ipv4.conf.other.x"));
    // Unanchored, as regexp.MatchString: an entry without ^ and $ matches
    // anywhere, the loophole the README warns about.
    assert!(m(r"net\.core\.somaxconn", "net.core.somaxconn.x"));
    assert!(m("ipv4", "net.ipv4.ip_forward"));
    assert!(m("", "anything"));
    assert!(m("a|", "zzz"));
}

#[test]
fn operators() {
    let cases: &[(&str, &str, bool)] = &[
        ("a.c", "abc", true),
        ("a.c", "a\nc", false),
        ("^ab$", "ab", true),
        ("^ab$", "ab\n", false),
        (r"\Aab\z", "ab", true),
        ("a*b", "b", true),
        ("a+b", "b", false),
        ("a+b", "aab", true),
        ("colou?r", "color", true),
        ("^a{2}$", "aa", true),
        ("^a{2}$", "aaa", false),
        ("^a{2,}$", "aaaa", true),
        ("^a{2,3}$", "aaaa", false),
        ("^a{0}b$", "b", true),
        ("^(ab|cd)+$", "abcdab", true),
        ("^(ab|cd)+$", "abc", false),
        ("^(?:x|y)z$", "yz", true),
        ("^(?P<n>x)(?<m>y)$", "xy", true),
        ("^[a-c_]+$", "a_b", true),
        ("^[^a-c]$", "d", true),
        ("^[^a-c]$", "b", false),
        ("^[]a]+$", "]a", true),
        ("^[a-]+$", "-a", true),
        (r"^[\d.]+$", "1.2", true),
        (r"^[\D]$", "x", true),
        (r"^[\D]$", "1", false),
        (r"^\d\w\s$", "1_ ", true),
        (r"^\S\W$", "x-", true),
        (r"^\s$", "\x0b", false),
        (r"^\x41\x{42}$", "AB", true),
        (r"^\.\*\\$", ".*\\", true),
        ("a{", "a{", true),
        ("a{,2}", "a{,2}", true),
        ("^a*?b$", "aab", true),
        ("^(a*)*$", "aaaa", true),
        ("^(a|)+$", "", true),
        ("^é+$", "éé", true),
    ];
    for (p, t, want) in cases {
        assert_eq!(m(p, t), *want, "{p:?} on {t:?}");
    }
}

#[test]
fn syntax_errors_read_as_go() {
    let cases = [
        ("(", "error parsing regexp: missing closing ): `(`"),
        ("a)", "error parsing regexp: unexpected ): `a)`"),
        ("[a-z", "error parsing regexp: missing closing ]: `[a-z`"),
        (
            "[z-a]",
            "error parsing regexp: invalid character class range: `z-a`",
        ),
        (
            "*a",
            "error parsing regexp: missing argument to repetition operator: `*`",
        ),
        (
            "a**",
            "error parsing regexp: invalid nested repetition operator: `**`",
        ),
        (
            "a{1001}",
            "error parsing regexp: invalid repeat count: `{1001}`",
        ),
        (
            "a{3,2}",
            "error parsing regexp: invalid repeat count: `{3,2}`",
        ),
        (
            r"\q",
            "error parsing regexp: invalid escape sequence: `\\q`",
        ),
        (
            "a\\",
            "error parsing regexp: trailing backslash at end of expression: ``",
        ),
        (
            r"\xZZ",
            "error parsing regexp: invalid escape sequence: `\\xZZ`",
        ),
        (
            "(?P<>a)",
            "error parsing regexp: invalid named capture: `(?P<>a)`",
        ),
    ];
    for (p, want) in cases {
        assert_eq!(Regex::new(p).unwrap_err().to_string(), want, "{p}");
    }
}

#[test]
fn unsupported_syntax_is_named_not_guessed() {
    for (p, what) in [
        ("(?i)net", "`(?i)`"),
        (r"\bnet", r"`\b`"),
        (r"\pL", r"`\p`"),
        ("[[:alpha:]]", "`[:alpha:]`"),
        (r"\Qa.b\E", r"`\Q`"),
    ] {
        let e = Regex::new(p).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{p}: {e:?}");
        assert!(e.to_string().contains(what), "{p}: {e}");
    }
}

#[test]
fn huge_expansions_are_refused_and_matching_stays_linear() {
    assert_eq!(
        Regex::new("((a{1000}){1000}){1000}").unwrap_err(),
        Error::Syntax("expression too large".into())
    );
    // Catastrophic for a backtracker (it would not finish in a lifetime);
    // linear here, so it returns well within the tests' deadline, however
    // busy the machine. No time is asserted.
    let re = Regex::new("^(a*)*(a*)*(a*)*b$").unwrap();
    let text = "a".repeat(5000);
    let matched = testsupport::within_deadline("matching", move || re.is_match(&text));
    assert!(!matched);
}

/// Patterns of the supported subset.
fn pattern() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("_".to_string()),
        Just(r"\.".to_string()),
        Just(".".to_string()),
        Just("[a-c]".to_string()),
        Just("[^b.]".to_string()),
        Just(r"[\d_]".to_string()),
        Just(r"\d".to_string()),
        Just(r"\w".to_string()),
        Just(r"\S".to_string()),
        Just("^".to_string()),
        Just("$".to_string()),
    ];
    let leaf = (
        atom,
        prop_oneof![
            Just(""),
            Just("*"),
            Just("+"),
            Just("?"),
            Just("{2}"),
            Just("{1,3}"),
            Just("{0,}"),
            Just("*?"),
        ],
    )
        .prop_map(|(a, q)| format!("{a}{q}"));
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.concat()),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}|{b}")),
            (
                inner.clone(),
                prop_oneof![Just(""), Just("*"), Just("+"), Just("?")]
            )
                .prop_map(|(a, q)| format!("({a}){q}")),
            inner.prop_map(|a| format!("(?:{a})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The `regex` crate implements the same RE2 syntax; in ASCII mode its
    /// perl classes are Go's (haystacks avoid `\v`, where `\s` differs).
    #[test]
    fn agrees_with_the_regex_crate(p in pattern(), text in "[ab_.1 \nc-]{0,12}") {
        let ours = Regex::new(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
        let oracle = regex::bytes::Regex::new(&format!("(?-u){p}")).unwrap();
        prop_assert_eq!(ours.is_match(&text), oracle.is_match(text.as_bytes()), "{} on {:?}", p, text);
    }

    /// Arbitrary text never panics the parser, and whatever it accepts
    /// matches without panicking.
    #[test]
    fn any_pattern_parses_or_fails_cleanly(p in "[ab\\\\()\\[\\]{}*+?|^$.,0-9:PQ<>-]{0,16}", text in "[ab]{0,6}") {
        if let Ok(re) = Regex::new(&p) {
            re.is_match(&text);
        }
    }
}
