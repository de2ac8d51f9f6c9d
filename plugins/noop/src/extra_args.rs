//! noop's own CNI_ARGS reading (`parseExtraArgs` in the reference): any keys
//! are allowed, every pair needs exactly one `=`, a later key wins. Only
//! `DEBUG` is used. Deliberately not `skel::args`, whose rules differ.

use std::collections::HashMap;

pub fn parse(raw: &str) -> Result<HashMap<String, String>, String> {
    let mut map = HashMap::new();
    if raw.is_empty() {
        return Ok(map);
    }
    for item in raw.split(';') {
        let kv: Vec<&str> = item.split('=').collect();
        if kv.len() != 2 {
            // Go's `%s` of a []string: `[a b c]`.
            return Err(format!(
                "CNI_ARGS invalid key/value pair: [{}]",
                kv.join(" ")
            ));
        }
        map.insert(kv[0].to_string(), kv[1].to_string());
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_keys_later_wins() {
        let m = parse("DEBUG=/a;FOO=BAR;DEBUG=/b;=x").unwrap();
        assert_eq!(m["DEBUG"], "/b");
        assert_eq!(m["FOO"], "BAR");
        assert_eq!(m[""], "x");
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn bad_pairs_use_reference_wording() {
        assert_eq!(
            parse("a=b=c").unwrap_err(),
            "CNI_ARGS invalid key/value pair: [a b c]"
        );
        assert_eq!(
            parse("DEBUG=/x;").unwrap_err(),
            "CNI_ARGS invalid key/value pair: []"
        );
        assert_eq!(
            parse("none").unwrap_err(),
            "CNI_ARGS invalid key/value pair: [none]"
        );
    }
}
