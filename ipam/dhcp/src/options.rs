//! What the client sends beyond the protocol's own options: the
//! configured `provide` options (values given or taken from CNI_ARGS)
//! and the parameter request list built from `request`, with the
//! reference's names, defaults and messages.

use crate::config::{Provide, Request};
use crate::packet::opt;

/// The options of one lease's messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Options sent in DISCOVER, REQUEST (and renewals), in order; a code
    /// appears once (a later value replaces an earlier one, as the
    /// reference's option map does).
    pub send: Vec<(u8, Vec<u8>)>,
    /// The parameter request list (option 55).
    pub request: Vec<u8>,
}

/// The request list when nothing is asked for explicitly (the reference's
/// DHCP library default: mask, router, domain name, name servers).
const LIBRARY_DEFAULT_REQUEST: [u8; 4] =
    [opt::SUBNET_MASK, opt::ROUTER, opt::DOMAIN_NAME, opt::DNS];
/// Always asked for unless an entry says `skipDefault`.
const DEFAULT_REQUEST: [u8; 2] = [opt::ROUTER, opt::SUBNET_MASK];

/// An option by the names the reference knows, or by number.
pub fn parse_name(name: &str) -> Result<u8, String> {
    let code = match name {
        "dhcp-client-identifier" => opt::CLIENT_ID,
        "subnet-mask" => opt::SUBNET_MASK,
        "routers" => opt::ROUTER,
        "host-name" => opt::HOST_NAME,
        "user-class" => opt::USER_CLASS,
        "vendor-class-identifier" => opt::CLASS_ID,
        _ => return parse_uint8(name),
    };
    Ok(code)
}

/// Go's `strconv.ParseUint(s, 10, 8)` and its messages, behind the
/// reference's prefix.
fn parse_uint8(s: &str) -> Result<u8, String> {
    let quoted = skel::gojson::quote(s);
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Can not parse option: strconv.ParseUint: parsing {quoted}: invalid syntax"
        ));
    }
    s.parse::<u8>().map_err(|_| {
        format!("Can not parse option: strconv.ParseUint: parsing {quoted}: value out of range")
    })
}

fn put(send: &mut Vec<(u8, Vec<u8>)>, code: u8, value: &[u8]) {
    match send.iter_mut().find(|(c, _)| *c == code) {
        Some(slot) => slot.1 = value.to_vec(),
        None => send.push((code, value.to_vec())),
    }
}

/// `CNI_ARGS` as the reference's own parser reads it: `;`-separated
/// `key=value` pairs, split at the first `=`, later keys winning.
fn cni_args(args: &str) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for pair in args.split(';') {
        if let Some((k, v)) = pair.split_once('=') {
            out.retain(|(key, _)| *key != k);
            out.push((k, v));
        }
    }
    out
}

/// The options of a lease configured with `provide` and `request`, for
/// an invocation with `CNI_ARGS` `args`.
pub fn prepare(args: &str, provide: &[Provide], request: &[Request]) -> Result<Options, String> {
    let args = cni_args(args);
    let mut o = Options::default();
    for p in provide {
        let code = parse_name(&p.option).map_err(|e| {
            format!(
                "Can not parse option {}: {e}",
                skel::gojson::quote(&p.option)
            )
        })?;
        let quote = skel::gojson::quote;
        if !p.value.is_empty() {
            if p.value.len() > 255 {
                return Err(format!(
                    "value too long for option {}: {}",
                    quote(&p.option),
                    quote(&p.value)
                ));
            }
            put(&mut o.send, code, p.value.as_bytes());
        }
        if let Some((_, v)) = args.iter().find(|(k, _)| *k == p.from_arg) {
            if v.len() > 255 {
                // The reference prints the configured value here, not the
                // argument's.
                return Err(format!(
                    "value too long for option {} from CNI_ARGS {}: {}",
                    quote(&p.option),
                    quote(&p.from_arg),
                    quote(&p.value)
                ));
            }
            put(&mut o.send, code, v.as_bytes());
        }
    }
    let mut skip_default = false;
    for r in request {
        skip_default |= r.skip_default;
        if r.option.is_empty() {
            continue;
        }
        let code = parse_name(&r.option).map_err(|e| {
            format!(
                "Can not parse option {}: {e}",
                skel::gojson::quote(&r.option)
            )
        })?;
        if !o.request.contains(&code) {
            o.request.push(code);
        }
    }
    if !skip_default {
        for code in DEFAULT_REQUEST {
            if !o.request.contains(&code) {
                o.request.push(code);
            }
        }
    }
    if o.request.is_empty() {
        o.request = LIBRARY_DEFAULT_REQUEST.to_vec();
    }
    Ok(o)
}

/// The client identifier of an attachment: `<containerID>/<network>/
/// <ifname>`, cut to 254 bytes (it is sent as option 61 behind a type
/// byte), as the reference makes it. It names the lease in the daemon and
/// at the server, so leases survive a switch between the two suites.
pub fn client_id(container_id: &str, network: &str, ifname: &str) -> Vec<u8> {
    let mut id = format!("{container_id}/{network}/{ifname}").into_bytes();
    id.truncate(254);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provide(option: &str, value: &str, from_arg: &str) -> Provide {
        Provide {
            option: option.into(),
            value: value.into(),
            from_arg: from_arg.into(),
        }
    }

    fn request(option: &str, skip: bool) -> Request {
        Request {
            option: option.into(),
            skip_default: skip,
        }
    }

    #[test]
    fn defaults_are_router_and_mask() {
        let o = prepare("", &[], &[]).unwrap();
        assert!(o.send.is_empty());
        assert_eq!(o.request, [3, 1]);
        let o = prepare("", &[], &[request("121", false)]).unwrap();
        assert_eq!(o.request, [121, 3, 1]);
        let o = prepare("", &[], &[request("121", true), request("3", false)]).unwrap();
        assert_eq!(o.request, [121, 3]);
        // skipDefault and nothing asked: the library's own list stays.
        let o = prepare("", &[], &[request("", true)]).unwrap();
        assert_eq!(o.request, [1, 3, 15, 6]);
    }

    #[test]
    fn provided_values_and_cni_args() {
        let o = prepare(
            "IgnoreUnknown=1;K8S_POD_NAME=pod-a;X=a=b",
            &[
                provide("host-name", "fallback", "K8S_POD_NAME"),
                provide("60", "vendor", ""),
                provide("user-class", "", "X"),
                provide("77", "", "missing"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            o.send,
            vec![
                (12, b"pod-a".to_vec()),
                (60, b"vendor".to_vec()),
                (77, b"a=b".to_vec())
            ]
        );
    }

    #[test]
    fn errors_read_as_the_references() {
        assert_eq!(
            prepare("", &[provide("x", "v", "")], &[]).unwrap_err(),
            r#"Can not parse option "x": Can not parse option: strconv.ParseUint: parsing "x": invalid syntax"#
        );
        assert_eq!(
            prepare("", &[], &[request("300", false)]).unwrap_err(),
            r#"Can not parse option "300": Can not parse option: strconv.ParseUint: parsing "300": value out of range"#
        );
        let long = "v".repeat(256);
        assert!(
            prepare("", &[provide("12", &long, "")], &[])
                .unwrap_err()
                .starts_with("value too long for option \"12\": ")
        );
        assert_eq!(
            prepare(&format!("A={long}"), &[provide("12", "short", "A")], &[]).unwrap_err(),
            r#"value too long for option "12" from CNI_ARGS "A": "short""#
        );
    }

    #[test]
    fn client_ids_are_cut_to_254_bytes() {
        assert_eq!(client_id("ctrA", "dnet", "eth0"), b"ctrA/dnet/eth0");
        assert_eq!(client_id(&"c".repeat(300), "n", "eth0").len(), 254);
    }
}
