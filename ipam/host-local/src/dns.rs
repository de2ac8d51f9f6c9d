//! `resolvConf`: the reference's small resolv.conf reader, whose result
//! becomes the `dns` of the ADD result.

use std::path::Path;

use skel::types::Dns;

use crate::error::Error;

/// Parse a resolv.conf: `nameserver` appends, `domain` replaces, `search`
/// and `options` append every field; comments (`#`, `;`) and lines with
/// fewer than two fields are skipped.
pub fn parse_resolv_conf(path: &str) -> Result<Dns, Error> {
    let text = std::fs::read(path).map_err(|e| Error::io("open", Path::new(path), &e))?;
    Ok(parse(&String::from_utf8_lossy(&text)))
}

fn parse(text: &str) -> Dns {
    let mut dns = Dns::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 2 {
            continue;
        }
        let rest = fields[1..].iter().map(|s| s.to_string());
        match fields[0] {
            "nameserver" => dns.nameservers.push(fields[1].to_string()),
            "domain" => dns.domain = fields[1].to_string(),
            "search" => dns.search.extend(rest),
            "options" => dns.options.extend(rest),
            _ => {}
        }
    }
    dns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_the_reference() {
        let dns = parse(
            "# c\n; c\nnameserver 10.240.0.53\nnameserver fd40::53 extra\n\
             domain a.example\ndomain b.example\nsearch x.example y.example\n\
             options ndots:5 rotate\nsearch\nbogus line here\n",
        );
        assert_eq!(dns.nameservers, vec!["10.240.0.53", "fd40::53"]);
        assert_eq!(dns.domain, "b.example");
        assert_eq!(dns.search, vec!["x.example", "y.example"]);
        assert_eq!(dns.options, vec!["ndots:5", "rotate"]);
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = parse_resolv_conf("/nonexistent/cnirs-resolv.conf").unwrap_err();
        assert_eq!(
            e.to_string(),
            "open /nonexistent/cnirs-resolv.conf: no such file or directory"
        );
    }
}
