//! Property tests of the parsers: arbitrary input never panics, sysctl
//! files never leave `/proc/sys/net`, MACs round-trip in every Go form.

use proptest::prelude::*;

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
}
