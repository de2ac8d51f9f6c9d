//! Property tests of the parsers: arbitrary input never panics, sysctl
//! files never leave `/proc/sys/net`, MACs round-trip in every Go form,
//! a backup cut anywhere yields only values it really holds.

use proptest::prelude::*;

use crate::backup::{Backup, Found, Saved};
use crate::config::{Config, Plan, check_duplicate_sysctl_keys};
use crate::{mac, sysctl};

/// An interface name skel lets through.
fn ifname() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9._%-]{1,15}".prop_filter("skel refuses . and ..", |n| n != "." && n != "..")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn sysctl_files_stay_under_proc_sys_net(key in "[a-zA-Z0-9._/-]{0,40}|.*IFNAME.*", ifname in ifname()) {
        if let Ok(file) = sysctl::file_of(&key, &ifname) {
            prop_assert!(file.starts_with("/proc/sys/net/"), "{}", file);
            prop_assert!(!file.split('/').any(|c| c == ".." || c == "."), "{}", file);
            prop_assert!(!file.contains("//"), "{}", file);
        }
    }

    #[test]
    fn macs_round_trip_in_every_form(bytes in prop_oneof![
        prop::collection::vec(any::<u8>(), 6),
        prop::collection::vec(any::<u8>(), 8),
        prop::collection::vec(any::<u8>(), 20),
    ], upper in any::<bool>()) {
        let hex: Vec<String> = bytes.iter().map(|b| if upper { format!("{b:02X}") } else { format!("{b:02x}") }).collect();
        let dotted: Vec<String> = hex.chunks(2).map(|p| p.concat()).collect();
        for text in [hex.join(":"), hex.join("-"), dotted.join(".")] {
            prop_assert_eq!(mac::parse(&text).unwrap(), bytes.clone(), "{}", text);
        }
    }

    #[test]
    fn mac_parser_never_panics(s in "\\PC{0,70}|[0-9a-fA-F:.-]{0,64}") {
        if let Ok(b) = mac::parse(&s) {
            prop_assert!(matches!(b.len(), 6 | 8 | 20));
        }
    }

    /// Arbitrary documents: the duplicate-key scan and the decoder answer
    /// (ok or an error), and whatever decodes yields a plan or an error.
    #[test]
    fn config_parsing_never_panics(
        doc in prop_oneof![
            "\\PC{0,60}",
            "[{}\\[\\]\",:a-zA-Z0-9. -]{0,80}",
            (prop::sample::select(&["sysctl", "SysCtl", "mac", "mtu", "txQLen", "allmulti", "promisc", "args", "runtimeConfig", "dataDir"][..]),
             prop_oneof![Just("1".to_string()), Just("-1".to_string()), Just("true".to_string()), Just("null".to_string()),
                         "\"[0-9a-f:.]{0,20}\"", Just(r#"{"a.b":"1","a.b":"2"}"#.to_string()),
                         Just(r#"{"cni":{"sysctl":{"net.x":"1"},"mtu":99999999999}}"#.to_string()), Just("[1,2]".to_string())])
                .prop_map(|(k, v)| format!(r#"{{"name":"n","{k}":{v}}}"#)),
        ],
        args in "[A-Za-z=;:0-9]{0,20}",
        ifname in ifname(),
    ) {
        let _ = check_duplicate_sysctl_keys(doc.as_bytes());
        if let Ok(c) = Config::parse(doc.as_bytes(), &args) {
            let _ = Plan::new(&c, &ifname);
        }
    }

    /// A backup cut at any byte is whole, cut short (its attributes a
    /// subset of the whole one's, with the same values) or invalid: never
    /// a value the file did not hold.
    #[test]
    fn a_cut_backup_yields_only_what_it_holds(
        mac in prop::option::of("[0-9a-f]{2}(:[0-9a-f]{2}){5}"),
        promisc in prop::option::of(any::<bool>()),
        mtu in prop_oneof![Just(0i64), 68i64..70000],
        allmulti in prop::option::of(any::<bool>()),
        txqlen in prop::option::of(0i64..100000),
        cut in any::<prop::sample::Index>(),
    ) {
        let whole = Saved { mac: mac.unwrap_or_default(), promisc, mtu, allmulti, txqlen };
        let text = whole.to_json();
        let n = cut.index(text.len() + 1);
        let b = Backup::new(std::path::Path::new("/nonexistent"), "c", "eth0", "n");
        match b.parse(Some(&text.as_bytes()[..n])) {
            Found::Saved(s) => prop_assert_eq!(s, whole),
            Found::Truncated(s) => {
                prop_assert!(s.mac.is_empty() || s.mac == whole.mac);
                prop_assert!(s.promisc.is_none() || s.promisc == whole.promisc);
                prop_assert!(s.mtu == 0 || s.mtu == whole.mtu);
                prop_assert!(s.allmulti.is_none() || s.allmulti == whole.allmulti);
                prop_assert!(s.txqlen.is_none() || s.txqlen == whole.txqlen);
            }
            Found::Invalid(_) => {}
            Found::Absent => prop_assert!(false, "absent"),
        }
    }
}
