//! STATUS and GC (CNI 1.1).

use serde_json::Value;
use skel::CmdArgs;

use crate::config::Config;
use crate::error::Error;
use crate::masq;
use crate::spoofchk;

/// Ready when the IPAM plugin is (L2 needs nothing).
pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    if conf.is_layer3() {
        skel::invoke::delegate(&conf.ipam_type, "STATUS", &args.path, &args.stdin)?;
    }
    Ok(())
}

/// `cni.dev/valid-attachments` as (containerID, ifname) pairs.
pub fn valid_attachments(stdin: &[u8]) -> Result<Vec<(String, String)>, Error> {
    let v: Value = serde_json::from_slice(stdin)
        .map_err(|e| Error::decode(format!("failed to load netconf: {e}")))?;
    let Some(list) = v.get("cni.dev/valid-attachments") else {
        return Ok(Vec::new());
    };
    let Some(items) = list.as_array() else {
        return Err(Error::decode(
            "failed to load netconf: cni.dev/valid-attachments is not a list",
        ));
    };
    Ok(items
        .iter()
        .filter_map(|a| {
            Some((
                a.get("containerID")?.as_str()?.to_string(),
                a.get("ifname")?.as_str()?.to_string(),
            ))
        })
        .collect())
}

/// Remove firewall rules of attachments that are no longer valid, then
/// forward GC to IPAM. Every step runs; failures are reported together.
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let valid = valid_attachments(&args.stdin)?;
    let mut errors = Vec::new();
    if conf.is_layer3()
        && let Err(e) = masq::gc(conf.ip_masq_backend, &conf.name, &valid)
    {
        errors.push(e);
    }
    if conf.macspoofchk {
        let keep: Vec<String> = valid
            .iter()
            .map(|(cid, ifname)| spoofchk::id(cid, ifname))
            .collect();
        let host = cni_net::Netlink::host();
        let exists = |name: &str| match &host {
            Ok(h) => h.find_link(name).map(|l| l.is_some()).unwrap_or(true),
            Err(_) => true,
        };
        if let Err(e) = spoofchk::gc(&keep, &exists) {
            errors.push(e);
        }
    }
    if conf.is_layer3()
        && let Err(e) = skel::invoke::delegate(&conf.ipam_type, "GC", &args.path, &args.stdin)
    {
        errors.push(e.into());
    }
    Error::join(errors)
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
        assert_eq!(v, vec![("c1".to_string(), "eth0".to_string())]);
        assert!(valid_attachments(br#"{"name":"n"}"#).unwrap().is_empty());
    }
}
