//! GC's input: the attachments the runtime still uses.

use serde_json::Value;

use crate::error::Error;

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
