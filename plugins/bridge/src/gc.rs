//! STATUS and GC (CNI 1.1).

use cni_firewall::{Scope, ipmasq, spoofchk};
use cni_net::Netlink;
use serde_json::Value;
use skel::CmdArgs;

use crate::config::Config;
use crate::error::Error;

/// Ready when the IPAM plugin is (L2 needs nothing).
pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    if conf.is_layer3() {
        skel::invoke::delegate(&conf.ipam_type, "STATUS", &args.path, &args.stdin)?;
    }
    Ok(())
}

/// `cni.dev/valid-attachments` (or the older `cni.dev/attachments`) as
/// (containerID, ifname) pairs; `null` means none is valid. `None` when
/// neither key is there: the runtime said nothing about what is in use.
pub fn valid_attachments(stdin: &[u8]) -> Result<Option<Vec<(String, String)>>, Error> {
    let v: Value = serde_json::from_slice(stdin)
        .map_err(|e| Error::decode(format!("failed to load netconf: {e}")))?;
    let Some(list) = ["cni.dev/valid-attachments", "cni.dev/attachments"]
        .iter()
        .find_map(|k| v.get(*k))
    else {
        return Ok(None);
    };
    let items = match list {
        Value::Null => &[][..],
        Value::Array(items) => items.as_slice(),
        _ => {
            return Err(Error::decode(
                "failed to load netconf: cni.dev/valid-attachments is not a list",
            ));
        }
    };
    Ok(Some(
        items
            .iter()
            .filter_map(|a| {
                Some((
                    a.get("containerID")?.as_str()?.to_string(),
                    a.get("ifname")?.as_str()?.to_string(),
                ))
            })
            .collect(),
    ))
}

/// Remove firewall rules of attachments that are no longer valid, then
/// forward GC to IPAM. Every step runs; failures are reported together.
/// Without a list of valid attachments no rule is removed (as host-local
/// releases no lease): every attachment may still be in use.
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let valid = valid_attachments(&args.stdin)?;
    if valid.is_none() && (conf.is_layer3() || conf.macspoofchk) {
        eprintln!(
            "bridge: GC of network {} without cni.dev/valid-attachments: removing no rules",
            conf.name
        );
    }
    let mut errors = Vec::new();
    if let Some(valid) = &valid
        && (conf.is_layer3() || conf.macspoofchk)
        && let Err(e) = firewall(&conf, valid)
    {
        errors.push(e);
    }
    if conf.is_layer3()
        && let Err(e) = skel::invoke::delegate(&conf.ipam_type, "GC", &args.path, &args.stdin)
    {
        errors.push(e.into());
    }
    crate::error::join(errors)
}

/// Remove the masquerade and spoof-check rules of attachments not in
/// `valid`.
fn firewall(conf: &Config, valid: &[(String, String)]) -> Result<(), Error> {
    let host = Netlink::host()?;
    let mut errors = Vec::new();
    if conf.is_layer3()
        && let Err(e) = ipmasq::gc(&host, Scope::of(conf.ip_masq_backend), &conf.name, valid)
    {
        errors.push(e);
    }
    if conf.macspoofchk {
        let keep: Vec<String> = valid
            .iter()
            .map(|(cid, ifname)| spoofchk::id(cid, ifname))
            .collect();
        // A lookup that fails counts as a live link: its rules stay.
        let exists = |name: &str| host.find_link(name).map_or(true, |l| l.is_some());
        if let Err(e) = spoofchk::gc(&host, &keep, &exists) {
            errors.push(e);
        }
    }
    Ok(cni_firewall::join(errors)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_valid_attachments() {
        let v = valid_attachments(
            br#"{"name":"n","cni.dev/valid-attachments":[{"containerID":"c1","ifname":"eth0"},{"x":1}]}"#,
        )
        .unwrap();
        assert_eq!(v, Some(vec![("c1".to_string(), "eth0".to_string())]));
        // No key: nothing is known, so nothing may be removed.
        assert_eq!(valid_attachments(br#"{"name":"n"}"#).unwrap(), None);
        // `null` and `[]`: none is valid. The older key is honoured.
        let none = Some(Vec::new());
        for extra in [
            r#""cni.dev/valid-attachments":null"#,
            r#""cni.dev/valid-attachments":[]"#,
            r#""cni.dev/attachments":[]"#,
        ] {
            let stdin = format!(r#"{{"name":"n",{extra}}}"#);
            assert_eq!(
                valid_attachments(stdin.as_bytes()).unwrap(),
                none,
                "{extra}"
            );
        }
        assert!(valid_attachments(br#"{"name":"n","cni.dev/valid-attachments":7}"#).is_err());
    }
}
