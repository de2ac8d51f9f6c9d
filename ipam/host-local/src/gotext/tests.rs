use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// What Go's `net.ParseIP` (Go ≥ 1.22) returns for each text, after
/// `To4()` for IPv4-mapped addresses.
#[test]
fn parse_ip_accepts_what_go_accepts() {
    let cases: &[(&[u8], Option<&str>)] = &[
        (b"10.240.0.5", Some("10.240.0.5")),
        (b"10.240.0.5\n", None),
        (b"10.240.0.5\r\n", None),
        (b" 10.240.0.5", None),
        (b"10.240.0.5 ", None),
        (b"\t10.240.0.5", None),
        (b"010.240.0.5", None),
        (b"10.240.0.05", None),
        (b"10.240.0.256", None),
        (b"10.240.0", None),
        (b"10.240.0.5.", None),
        (b"::ffff:10.240.0.5", Some("10.240.0.5")),
        (b"::FFFF:10.240.0.5", Some("10.240.0.5")),
        (b"::ffff:af0:5", Some("10.240.0.5")),
        (b"0:0:0:0:0:ffff:10.240.0.5", Some("10.240.0.5")),
        (b"::10.240.0.5", Some("::af0:5")),
        (b"FD40::5", Some("fd40::5")),
        (b"fd40:0:0:0:0:0:0:5", Some("fd40::5")),
        (b"fd40::0005", Some("fd40::5")),
        // Go 1.19 accepted this one; Go >= 1.22 does not.
        (b"fd40::00005", None),
        (b"fd40::5%eth0", None),
        (b"fd40::5%", None),
        (b"fd40::5\n", None),
        (b"fd40::010.240.0.5", None),
        (b"1:2:3:4:5:6:7::", Some("1:2:3:4:5:6:7:0")),
        (b"1::2:3:4:5:6:7:8", None),
        (b"1:2:3:4:5:6:7:8::", None),
        (b"1.2.3.4::", None),
        (b"::1.2.3.4:5", None),
        (b"1:2:3:4:5:6:7:1.2.3.4", None),
        (b"fd40::5:", None),
        (b"", None),
        (b"garbage", None),
        (b"10.240.0.5\xff", None),
    ];
    for (text, want) in cases {
        assert_eq!(
            parse_ip(text),
            want.map(ip),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn only_go_canonical_names_reserve_an_address() {
    assert_eq!(lease_name_ip("10.240.0.5"), Some(ip("10.240.0.5")));
    assert_eq!(lease_name_ip("fd40::5"), Some(ip("fd40::5")));
    for name in [
        "FD40::5",
        "fd40:0::5",
        "::ffff:10.240.0.5",
        "fd40::5\n",
        "lock",
        "last_reserved_ip.0",
    ] {
        assert_eq!(lease_name_ip(name), None, "{name:?}");
    }
    assert_eq!(ip_string(ip("::ffff:10.240.0.5")), "10.240.0.5");
    assert_eq!(ip_string(ip("1:0:0:2:0:0:3:4")), "1::2:0:0:3:4");
}

#[test]
fn trim_space_is_gos() {
    let cases: &[(&[u8], &[u8])] = &[
        (b"c1\r\neth0", b"c1\r\neth0"),
        (b" \t\r\nc1\r\neth0\r\n\x0b\x0c ", b"c1\r\neth0"),
        // NEL, NO-BREAK SPACE, IDEOGRAPHIC SPACE are white space to Go.
        ("\u{85}\u{a0}c1\u{3000}".as_bytes(), b"c1"),
        // The file separators are not.
        (b"\x1cc1\x1f", b"\x1cc1\x1f"),
        // An invalid byte stops the trim from its side.
        (b"\xff c1 \xfe", b"\xff c1 \xfe"),
        (b" \xffc1 ", b"\xffc1"),
        (b"   ", b""),
        (b"", b""),
    ];
    for (text, want) in cases {
        assert_eq!(
            trim_space(text),
            *want,
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
}
