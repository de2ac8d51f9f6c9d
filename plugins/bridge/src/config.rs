//! The bridge plugin's stdin configuration: every key of the reference
//! `NetConf`, its defaults and its validation errors, plus the container
//! MAC from `runtimeConfig.mac` > `args.cni.mac` > CNI_ARGS `MAC=`.
//!
//! Keys are matched like Go's JSON decoder: exact name first, then
//! case-insensitively; unknown keys are ignored; `null` keeps the default.

use cni_firewall::Backend;
use skel::args::{Args, Kind};
use skel::gojson::{self, Field, Object};
use skel::types::Dns;

use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub cni_version: String,
    pub name: String,
    pub bridge: String,
    pub is_gateway: bool,
    pub is_default_gateway: bool,
    pub force_address: bool,
    pub ip_masq: bool,
    /// `None`: auto (iptables when usable, else nftables; see
    /// `cni_firewall::select`).
    pub ip_masq_backend: Option<Backend>,
    /// 0: kernel default.
    pub mtu: u32,
    pub hairpin_mode: bool,
    pub promisc_mode: bool,
    /// Access VLAN (PVID, untagged); 0 = none.
    pub vlan: u16,
    /// Trunk VLANs (tagged), sorted and deduplicated; `None` when the key
    /// is absent or empty. With `vlan` set, `vlan` is the native VLAN.
    pub vlan_trunk: Option<Vec<u16>>,
    pub preserve_default_vlan: bool,
    pub macspoofchk: bool,
    pub enable_dad: bool,
    pub disable_container_interface: bool,
    pub port_isolation: bool,
    /// `ipam.type`; empty means pure L2.
    pub ipam_type: String,
    pub dns: Dns,
    /// Container MAC, normalised to lowercase `aa:bb:cc:dd:ee:ff`.
    pub mac: Option<[u8; 6]>,
}

impl Config {
    pub fn is_layer3(&self) -> bool {
        !self.ipam_type.is_empty()
    }

    /// Parse and validate `stdin`; `cni_args` is the raw `CNI_ARGS`.
    pub fn parse(stdin: &[u8], cni_args: &str) -> Result<Config, Error> {
        let doc = gojson::parse(stdin).map_err(load_err)?;
        let f = Object::new(&doc, "main.NetConf").map_err(load_err)?;
        let ipam_type = match f.object("ipam", "types.IPAM").map_err(load_err)? {
            Some(ipam) => ipam.field("type").map_err(load_err)?,
            None => String::new(),
        };
        let dns: Dns = f.field("dns").map_err(load_err)?;
        let string = |key: &str| f.field::<Option<String>>(key).map_err(load_err);
        let int = |key: &str| f.field::<i64>(key).map_err(load_err);
        let flag = |key: &str| f.field::<bool>(key).map_err(load_err);
        let backend = cni_firewall::select::parse_ipmasq(string("ipMasqBackend")?.as_deref())?;
        let mtu = int("mtu")?;
        let mtu = u32::try_from(mtu).map_err(|_| {
            Error::config(format!(
                "invalid MTU {mtu} (must be between 0 and {})",
                u32::MAX
            ))
        })?;
        let vlan = int("vlan")?;
        if !(0..=4094).contains(&vlan) {
            return Err(Error::config(format!(
                "invalid VLAN ID {vlan} (must be between 0 and 4094)"
            )));
        }
        let trunks = f
            .get("vlanTrunk")
            .items("[]*main.VlanTrunk")
            .map_err(load_err)?;
        let vlan_trunk = collect_trunk(&trunks)?;
        let mac = select_mac(&f, cni_args)?;
        Ok(Config {
            cni_version: string("cniVersion")?.unwrap_or_default(),
            name: string("name")?.unwrap_or_default(),
            bridge: string("bridge")?
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "cni0".to_string()),
            is_gateway: flag("isGateway")?,
            is_default_gateway: flag("isDefaultGateway")?,
            force_address: flag("forceAddress")?,
            ip_masq: flag("ipMasq")?,
            ip_masq_backend: backend,
            mtu,
            hairpin_mode: flag("hairpinMode")?,
            promisc_mode: flag("promiscMode")?,
            vlan: vlan as u16,
            vlan_trunk,
            preserve_default_vlan: flag("preserveDefaultVlan")?,
            macspoofchk: flag("macspoofchk")?,
            enable_dad: flag("enabledad")?,
            disable_container_interface: flag("disableContainerInterface")?,
            port_isolation: flag("portIsolation")?,
            ipam_type,
            dns,
            mac,
        })
    }

    /// The checks the reference makes at the start of ADD (after
    /// `loadNetConf`): they concern combinations of keys.
    pub fn validate_for_add(&mut self) -> Result<(), Error> {
        if self.is_layer3() && self.disable_container_interface {
            return Err(Error::config(
                "cannot use IPAM when DisableContainerInterface flag is set",
            ));
        }
        if self.is_default_gateway {
            self.is_gateway = true;
        }
        if self.hairpin_mode && self.promisc_mode {
            return Err(Error::config(
                "cannot set hairpin mode and promiscuous mode at the same time",
            ));
        }
        self.check_link_names()
    }

    /// Names of links ADD may create: the bridge, and `<bridge>.<vlan>`
    /// for a VLAN gateway. The kernel would refuse them late, or rewrite a
    /// `%` template into another name.
    fn check_link_names(&self) -> Result<(), Error> {
        if let Some(p) = cni_net::link::name_problem(&self.bridge) {
            return Err(Error::config(format!("bridge name {:?} {p}", self.bridge)));
        }
        let vlan_gateway = format!("{}.{}", self.bridge, self.vlan);
        if self.is_gateway && self.vlan != 0 && cni_net::link::name_problem(&vlan_gateway).is_some()
        {
            return Err(Error::config(format!(
                "bridge name {:?} is too long for its vlan gateway interface {vlan_gateway:?}",
                self.bridge
            )));
        }
        Ok(())
    }

    /// Whether the bridge needs VLAN filtering.
    pub fn vlan_filtering(&self) -> bool {
        self.vlan != 0 || self.vlan_trunk.is_some()
    }
}

/// A decoding error as the reference's `loadNetConf` reports it.
fn load_err(e: gojson::DecodeError) -> Error {
    Error::decode(format!("failed to load netconf: {e}"))
}

/// The reference's trunk rules: `{minID,maxID}` ranges and `{id}` singles,
/// ids 1..4094. Returns the sorted set, `None` when it is empty.
fn collect_trunk(items: &[Field]) -> Result<Option<Vec<u16>>, Error> {
    let mut set = std::collections::BTreeSet::new();
    for item in items {
        let Some(obj) = item.object("main.VlanTrunk").map_err(load_err)? else {
            continue;
        };
        let int = |key: &str| obj.field::<Option<i64>>(key).map_err(load_err);
        let (min, max) = (int("minID")?, int("maxID")?);
        match (min, max) {
            (Some(min), Some(max)) => {
                if !(1..=4094).contains(&min) {
                    return Err(Error::config("incorrect trunk minID parameter"));
                }
                if !(1..=4094).contains(&max) {
                    return Err(Error::config("incorrect trunk maxID parameter"));
                }
                if max < min {
                    return Err(Error::config(
                        "minID is greater than maxID in trunk parameter",
                    ));
                }
                set.extend(min as u16..=max as u16);
            }
            (None, Some(_)) => {
                return Err(Error::config(
                    "minID and maxID should be configured simultaneously, minID is missing",
                ));
            }
            (Some(_), None) => {
                return Err(Error::config(
                    "minID and maxID should be configured simultaneously, maxID is missing",
                ));
            }
            (None, None) => {}
        }
        if let Some(id) = int("id")? {
            if !(1..=4094).contains(&id) {
                return Err(Error::config("incorrect trunk id parameter"));
            }
            set.insert(id as u16);
        }
    }
    Ok(if set.is_empty() {
        None
    } else {
        Some(set.into_iter().collect())
    })
}

/// `runtimeConfig.mac` > `args.cni.mac` > CNI_ARGS `MAC`.
fn select_mac(f: &Object, cni_args: &str) -> Result<Option<[u8; 6]>, Error> {
    let args = Args::parse(cni_args, &[("MAC", Kind::String)]).map_err(Error::config)?;
    let mut mac = args
        .get("MAC")
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    let nested = |outer: &str, inner: &[&str]| -> Option<String> {
        let mut v = f.get(outer).value();
        for key in inner {
            v = gojson::lookup(v.as_object()?, key)?;
        }
        v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
    };
    if let Some(m) = nested("args", &["cni", "mac"]) {
        mac = Some(m);
    }
    if let Some(m) = nested("runtimeConfig", &["mac"]) {
        mac = Some(m);
    }
    mac.map(|m| parse_mac(&m)).transpose()
}

/// A 6-byte MAC in `aa:bb:cc:dd:ee:ff`, `aa-bb-...` or `aabb.ccdd.eeff` form,
/// as Go's `net.ParseMAC` accepts for Ethernet.
pub fn parse_mac(s: &str) -> Result<[u8; 6], Error> {
    let bad = || Error::config(format!("address {s}: invalid MAC address"));
    // Only ASCII hex digits: `from_str_radix` would take a sign (`+f`), and
    // slicing a multi-byte character below would panic.
    if !s.is_ascii() {
        return Err(bad());
    }
    let hex = |t: &str| -> Result<u8, Error> {
        if t.len() != 2 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        u8::from_str_radix(t, 16).map_err(|_| bad())
    };
    let mut out = [0u8; 6];
    if s.len() == 17 && (s.as_bytes()[2] == b':' || s.as_bytes()[2] == b'-') {
        let sep = s.as_bytes()[2] as char;
        let parts: Vec<&str> = s.split(sep).collect();
        if parts.len() != 6 {
            return Err(bad());
        }
        for (o, p) in out.iter_mut().zip(parts) {
            *o = hex(p)?;
        }
    } else if s.len() == 14 && s.as_bytes()[4] == b'.' {
        let parts: Vec<&str> = s.split('.').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.len() != 4) {
            return Err(bad());
        }
        for (i, p) in parts.iter().enumerate() {
            out[i * 2] = hex(&p[..2])?;
            out[i * 2 + 1] = hex(&p[2..])?;
        }
    } else {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Config, Error> {
        Config::parse(json.as_bytes(), "")
    }

    fn msg(json: &str) -> String {
        parse(json).unwrap_err().0.msg
    }

    #[test]
    fn absent_keys_take_the_reference_defaults() {
        let c = parse(r#"{"cniVersion":"1.0.0","name":"n","type":"bridge"}"#).unwrap();
        assert_eq!(c.bridge, "cni0");
        assert!(!c.is_gateway && !c.ip_masq && !c.preserve_default_vlan);
        assert_eq!(c.ip_masq_backend, None);
        assert_eq!((c.mtu, c.vlan, c.vlan_trunk.clone()), (0, 0, None));
        assert!(!c.is_layer3());
        assert_eq!(c.mac, None);
    }

    #[test]
    fn every_key_is_read() {
        let c = parse(
            r#"{"cniVersion":"1.1.0","name":"n","bridge":"br9","isGateway":true,"isDefaultGateway":true,
            "forceAddress":true,"ipMasq":true,"ipMasqBackend":"iptables","mtu":1400,"hairpinMode":true,
            "promiscMode":false,"vlan":0,"vlanTrunk":[{"minID":5,"maxID":7},{"id":3},{"id":6}],
            "preserveDefaultVlan":true,"macspoofchk":true,"enabledad":true,"disableContainerInterface":false,
            "portIsolation":true,"ipam":{"type":"host-local"},"dns":{"nameservers":["10.240.0.1"]}}"#,
        )
        .unwrap();
        assert_eq!(c.bridge, "br9");
        assert!(c.is_gateway && c.is_default_gateway && c.force_address && c.ip_masq);
        assert_eq!(c.ip_masq_backend, Some(Backend::Iptables));
        assert_eq!(c.mtu, 1400);
        assert!(c.hairpin_mode && !c.promisc_mode && c.preserve_default_vlan);
        assert_eq!(c.vlan_trunk, Some(vec![3, 5, 6, 7]));
        assert!(c.macspoofchk && c.enable_dad && c.port_isolation);
        assert_eq!(c.ipam_type, "host-local");
        assert_eq!(c.dns.nameservers, vec!["10.240.0.1"]);
        assert!(c.vlan_filtering());
    }

    #[test]
    fn vlan_and_trunk_together() {
        // Accepted since reference v1.8: `vlan` is the trunk's native VLAN.
        let c =
            parse(r#"{"name":"n","vlan":5,"vlanTrunk":[{"id":7},{"minID":5,"maxID":6}]}"#).unwrap();
        assert_eq!((c.vlan, c.vlan_trunk), (5, Some(vec![5, 6, 7])));
    }

    #[test]
    fn keys_match_case_insensitively() {
        let c = parse(r#"{"name":"n","Bridge":"brx","ISGATEWAY":true}"#).unwrap();
        assert_eq!(c.bridge, "brx");
        assert!(c.is_gateway);
    }

    #[test]
    fn invalid_values_get_the_reference_errors() {
        let cases = [
            (
                r#"{"name":"n","vlan":4095}"#,
                "invalid VLAN ID 4095 (must be between 0 and 4094)",
            ),
            (
                r#"{"name":"n","vlan":-1}"#,
                "invalid VLAN ID -1 (must be between 0 and 4094)",
            ),
            (
                r#"{"name":"n","mtu":-1}"#,
                "invalid MTU -1 (must be between 0 and 4294967295)",
            ),
            (
                r#"{"name":"n","mtu":4294967296}"#,
                "invalid MTU 4294967296 (must be between 0 and 4294967295)",
            ),
            (
                r#"{"name":"n","vlanTrunk":[{"minID":0,"maxID":3}]}"#,
                "incorrect trunk minID parameter",
            ),
            (
                r#"{"name":"n","vlanTrunk":[{"minID":1,"maxID":4095}]}"#,
                "incorrect trunk maxID parameter",
            ),
            (
                r#"{"name":"n","vlanTrunk":[{"minID":9,"maxID":3}]}"#,
                "minID is greater than maxID in trunk parameter",
            ),
            (
                r#"{"name":"n","vlanTrunk":[{"maxID":3}]}"#,
                "minID and maxID should be configured simultaneously, minID is missing",
            ),
            (
                r#"{"name":"n","vlanTrunk":[{"minID":3}]}"#,
                "minID and maxID should be configured simultaneously, maxID is missing",
            ),
            (
                r#"{"name":"n","vlanTrunk":[{"id":0}]}"#,
                "incorrect trunk id parameter",
            ),
            (
                r#"{"name":"n","ipMasqBackend":"pf"}"#,
                "unknown ipmasq backend \"pf\"",
            ),
            (
                r#"{"name":"n","portIsolation":"true"}"#,
                "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.portIsolation of type bool",
            ),
            (
                r#"{"name":"n","vlanTrunk":[{"minID":"x"}]}"#,
                "failed to load netconf: json: cannot unmarshal string into Go struct field VlanTrunk.vlanTrunk.minID of type int",
            ),
            (
                r#"{"name":"n","ipam":{"type":5}}"#,
                "failed to load netconf: json: cannot unmarshal number into Go struct field IPAM.ipam.type of type string",
            ),
            (
                r#"[{"name":"n"}]"#,
                "failed to load netconf: json: cannot unmarshal array into Go value of type main.NetConf",
            ),
            (
                r#"{"name":"n","runtimeConfig":{"mac":"zz:00:00:00:00:01"}}"#,
                "address zz:00:00:00:00:01: invalid MAC address",
            ),
        ];
        for (json, want) in cases {
            assert_eq!(msg(json), want, "{json}");
        }
    }

    #[test]
    fn invalid_combinations_are_refused_for_add() {
        let mut c = parse(r#"{"name":"n","hairpinMode":true,"promiscMode":true}"#).unwrap();
        assert_eq!(
            c.validate_for_add().unwrap_err().msg,
            "cannot set hairpin mode and promiscuous mode at the same time"
        );
        let mut c =
            parse(r#"{"name":"n","disableContainerInterface":true,"ipam":{"type":"host-local"}}"#)
                .unwrap();
        assert_eq!(
            c.validate_for_add().unwrap_err().msg,
            "cannot use IPAM when DisableContainerInterface flag is set"
        );
        let mut c = parse(r#"{"name":"n","isDefaultGateway":true}"#).unwrap();
        c.validate_for_add().unwrap();
        assert!(c.is_gateway);
        // `"ipam": {}` is pure L2.
        assert!(!parse(r#"{"name":"n","ipam":{}}"#).unwrap().is_layer3());
    }

    #[test]
    fn link_names_the_kernel_would_refuse_or_rewrite() {
        let add_err = |json: &str| {
            let e = parse(json).unwrap().validate_for_add().unwrap_err();
            assert_eq!(e.code, skel::code::INVALID_NETWORK_CONFIG, "{json}");
            e.msg.clone()
        };
        assert_eq!(
            add_err(r#"{"name":"n","bridge":"br%d"}"#),
            "bridge name \"br%d\" contains %, which the kernel reads as a name template"
        );
        assert_eq!(
            add_err(r#"{"name":"n","bridge":"br 0"}"#),
            "bridge name \"br 0\" contains / or : or whitespace characters"
        );
        assert_eq!(
            add_err(r#"{"name":"n","bridge":"abcdefghijklmnop"}"#),
            "bridge name \"abcdefghijklmnop\" is too long"
        );
        assert_eq!(
            add_err(r#"{"name":"n","bridge":"abcdefghijkl","vlan":100,"isGateway":true}"#),
            "bridge name \"abcdefghijkl\" is too long for its vlan gateway interface \"abcdefghijkl.100\""
        );
        // Without a gateway no `<bridge>.<vlan>` is created.
        let mut c = parse(r#"{"name":"n","bridge":"abcdefghijkl","vlan":100}"#).unwrap();
        c.validate_for_add().unwrap();
        // DEL never creates links: it takes any name.
        assert!(parse(r#"{"name":"n","bridge":"br%d"}"#).is_ok());
    }

    #[test]
    fn mac_from_runtime_config_beats_args_beats_cni_args() {
        let base = r#"{"name":"n""#;
        let with = |extra: &str, args: &str| {
            Config::parse(format!("{base}{extra}}}").as_bytes(), args)
                .unwrap()
                .mac
                .map(|m| cni_net::format_mac(&m))
        };
        assert_eq!(
            with("", "MAC=02:00:00:00:00:01"),
            Some("02:00:00:00:00:01".into())
        );
        assert_eq!(
            with(
                r#","args":{"cni":{"mac":"02:00:00:00:00:02"}}"#,
                "MAC=02:00:00:00:00:01"
            ),
            Some("02:00:00:00:00:02".into())
        );
        assert_eq!(
            with(
                r#","args":{"cni":{"mac":"02:00:00:00:00:02"}},"runtimeConfig":{"mac":"02-00-00-00-00-0A"}"#,
                "MAC=02:00:00:00:00:01"
            ),
            Some("02:00:00:00:00:0a".into())
        );
        assert_eq!(with("", ""), None);
        // Unknown CNI_ARGS keys fail unless IgnoreUnknown, as in the reference.
        assert!(Config::parse(br#"{"name":"n"}"#, "K8S_POD_NAME=x").is_err());
        assert!(Config::parse(br#"{"name":"n"}"#, "K8S_POD_NAME=x;IgnoreUnknown=1").is_ok());
    }

    #[test]
    fn mac_accepts_go_parse_mac_forms_of_six_bytes() {
        assert_eq!(parse_mac("0200.0000.00ff").unwrap(), [2, 0, 0, 0, 0, 0xff]);
        assert!(parse_mac("02:00:00:00:00").is_err());
        assert!(parse_mac("02:00:00:00:00:00:00:00").is_err());
        assert!(parse_mac("02:00-00:00:00:00").is_err());
    }

    #[test]
    fn mac_garbage_is_an_error_not_a_panic() {
        // 14 bytes with a dot at 4, but 'é' straddles the 2-byte split.
        assert!(parse_mac("0é0.0000.0000").is_err());
        assert!(parse_mac("+2:00:00:00:00:01").is_err());
        assert!(parse_mac("0200.+000.00ff").is_err());
        let e = Config::parse(
            br#"{"name":"n","runtimeConfig":{"mac":"0\u00e90.0000.0000"}}"#,
            "",
        )
        .unwrap_err();
        assert_eq!(e.code, skel::code::INVALID_NETWORK_CONFIG);
    }
}
