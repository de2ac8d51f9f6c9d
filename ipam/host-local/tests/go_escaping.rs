//! Go's encoder escapes `<`, `>` and `&` (and U+2028/U+2029) in every JSON
//! document it prints. Results and errors must be byte-identical to the
//! reference's even when they carry such characters.

mod common;

use std::fs;

use common::*;
use testsupport::TempDir;

#[test]
fn result_with_html_characters_is_byte_identical_to_the_reference() {
    let d = TempDir::new("hl-esc");
    fs::write(
        d.join("resolv.conf"),
        "nameserver 10.240.0.53\ndomain x&y.example\nsearch a<b&c>.example \u{2028}.example\noptions ndots:2\n",
    )
    .unwrap();
    let ipam = format!(
        r#""resolvConf":"{}","ranges":[[{{"subnet":"10.240.0.0/29"}}]]"#,
        d.join("resolv.conf").display()
    );
    for v in ["0.2.0", "0.4.0"] {
        let want = run(
            &reference(),
            "ADD",
            "c1",
            &conf(v, &d.join(&format!("go{v}")), &ipam),
        );
        let got = run(
            &ours(),
            "ADD",
            "c1",
            &conf(v, &d.join(&format!("rs{v}")), &ipam),
        );
        assert_eq!(want.code, 0, "{want:?}");
        assert!(
            want.stdout.contains(r"a\u003cb\u0026c\u003e.example"),
            "{want:?}"
        );
        assert_eq!(got.stdout, want.stdout, "cniVersion {v}");
    }
}

#[test]
fn error_with_html_characters_is_byte_identical_to_the_reference() {
    let d = TempDir::new("hl-esc");
    let c = conf(
        "1.0.0",
        d.path(),
        r#""ranges":[[{"subnet":"10.240.0.0/29","gateway":"<&>"}]]"#,
    );
    let want = run(&reference(), "ADD", "c1", &c);
    let got = run(&ours(), "ADD", "c1", &c);
    assert_eq!(want.code, 1, "{want:?}");
    assert!(want.stdout.contains(r"\u003c\u0026\u003e"), "{want:?}");
    assert_eq!((got.code, got.stdout), (want.code, want.stdout));
}
