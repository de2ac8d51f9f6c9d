//! Running the `nft` binary: one JSON batch per write (`nft -j -f -`, a
//! single kernel transaction), and JSON listings of one table for reads.
//! JSON on both sides means no quoting problems with names or comments.
//! [`spawn_tool`] starts any firewall helper (through [`skel::exec`]); the
//! iptables tools of [`crate::masq`] share it.

use serde_json::{Value, json};

use crate::error::Error;

/// Why an `nft` call failed.
#[derive(Debug)]
pub enum NftError {
    /// `nft` is missing or the kernel has no nf_tables: use iptables.
    Unavailable(String),
    Failed(String),
}

impl NftError {
    pub fn into_error(self, what: &str) -> Error {
        match self {
            NftError::Unavailable(m) | NftError::Failed(m) => {
                Error::internal(format!("{what}: {m}"))
            }
        }
    }
}

/// An `nft` process started by [`start`].
#[derive(Debug)]
pub struct Running(skel::exec::Running);

/// Start `nft` with `args` and `stdin` without waiting for it: it can run
/// while the caller does other work. `nft` exits only after the kernel has
/// released the transaction's objects (an RCU grace period, several ms),
/// so waiting for it last hides most of that.
pub fn start(args: &[&str], stdin: Option<&[u8]>) -> Result<Running, NftError> {
    spawn_tool("nft", args, stdin)
        .map(Running)
        .map_err(|e| NftError::Unavailable(e.to_string()))
}

/// Start a firewall helper (`nft`, `iptables-restore`, ...) with `args`,
/// `stdin` written to it and closed, stdout and stderr captured.
pub fn spawn_tool(
    tool: &str,
    args: &[&str],
    stdin: Option<&[u8]>,
) -> Result<skel::exec::Running, skel::exec::Error> {
    let mut cmd = skel::exec::Command::new(tool);
    cmd.args(args);
    if let Some(data) = stdin {
        cmd.stdin(data);
    }
    cmd.start()
}

impl Running {
    /// Wait for `nft`: its stdout, or why it failed.
    pub fn wait(self) -> Result<Vec<u8>, NftError> {
        let out = self.0.wait().map_err(|e| NftError::Failed(e.to_string()))?;
        if out.status.success() {
            return Ok(out.stdout);
        }
        let text = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let first = text.lines().next().unwrap_or("nft failed").to_string();
        if text.contains("Protocol not supported") || text.contains("Operation not supported") {
            return Err(NftError::Unavailable(first));
        }
        Err(NftError::Failed(first_error_line(&text)))
    }
}

fn nft(args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, NftError> {
    start(args, stdin)?.wait()
}

/// nft prints `<file>:<line>:<col>: Error: <what>` plus the offending input;
/// keep the error itself.
fn first_error_line(text: &str) -> String {
    text.lines()
        .find_map(|l| l.find("Error: ").map(|i| l[i + 7..].to_string()))
        .unwrap_or_else(|| text.lines().next().unwrap_or("nft failed").to_string())
        .to_lowercase()
}

/// Apply a batch of JSON commands (`{"add": ...}`, `{"delete": ...}`) in one
/// transaction. An empty batch runs nothing.
pub fn apply(commands: &[Value]) -> Result<(), NftError> {
    if commands.is_empty() {
        return Ok(());
    }
    let doc = json!({ "nftables": commands });
    nft(&["-j", "-f", "-"], Some(doc.to_string().as_bytes())).map(|_| ())
}

/// [`apply`] without waiting; `None` for an empty batch.
pub fn start_apply(commands: &[Value]) -> Result<Option<Running>, NftError> {
    if commands.is_empty() {
        return Ok(None);
    }
    let doc = json!({ "nftables": commands });
    start(&["-j", "-f", "-"], Some(doc.to_string().as_bytes())).map(Some)
}

/// Apply a batch in nft's text syntax in one transaction.
pub fn apply_text(batch: &str) -> Result<(), NftError> {
    if batch.is_empty() {
        return Ok(());
    }
    nft(&["-f", "-"], Some(batch.as_bytes())).map(|_| ())
}

/// The objects of one table (`family`, `name`), or an empty list when the
/// table does not exist.
pub fn list_table(family: &str, name: &str) -> Result<Vec<Value>, NftError> {
    match nft(&["-j", "list", "table", family, name], None) {
        Ok(out) => Ok(parse_listing(&out)),
        Err(NftError::Failed(m)) if m.contains("no such file or directory") => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn parse_listing(out: &[u8]) -> Vec<Value> {
    let v: Value = serde_json::from_slice(out).unwrap_or(Value::Null);
    match v.get("nftables") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

/// A rule from a listing: its chain, handle and comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRef {
    pub chain: String,
    pub handle: u64,
    pub comment: String,
    /// The rule's expressions, for callers that match on them.
    pub expr: Value,
}

pub fn rules(listing: &[Value]) -> Vec<RuleRef> {
    listing
        .iter()
        .filter_map(|item| {
            let r = item.get("rule")?;
            Some(RuleRef {
                chain: r.get("chain")?.as_str()?.to_string(),
                handle: r.get("handle")?.as_u64()?,
                comment: r
                    .get("comment")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                expr: r.get("expr").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

pub fn chains(listing: &[Value]) -> Vec<String> {
    listing
        .iter()
        .filter_map(|item| Some(item.get("chain")?.get("name")?.as_str()?.to_string()))
        .collect()
}

/// `{"delete": {"rule": ...}}` for a listed rule.
pub fn delete_rule(family: &str, table: &str, rule: &RuleRef) -> Value {
    json!({"delete": {"rule": {"family": family, "table": table, "chain": rule.chain, "handle": rule.handle}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rules_and_chains_of_a_listing() {
        let out = br#"{"nftables": [{"metainfo": {"version": "1.0.6"}},
            {"table": {"family": "inet", "name": "t", "handle": 3}},
            {"chain": {"family": "inet", "table": "t", "name": "c", "handle": 1}},
            {"rule": {"family": "inet", "table": "t", "chain": "c", "handle": 3, "comment": "abc", "expr": []}},
            {"rule": {"family": "inet", "table": "t", "chain": "c", "handle": 4, "expr": []}}]}"#;
        let l = parse_listing(out);
        assert_eq!(chains(&l), vec!["c"]);
        let r = rules(&l);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].handle, r[0].comment.as_str()), (3, "abc"));
        assert_eq!(r[1].comment, "");
        assert_eq!(
            delete_rule("inet", "t", &r[0]),
            json!({"delete": {"rule": {"family": "inet", "table": "t", "chain": "c", "handle": 3}}})
        );
    }

    #[test]
    fn error_text_keeps_the_error_itself() {
        assert_eq!(
            first_error_line("/dev/stdin:1:17-26: Error: No such file or directory\nlist chain x"),
            "no such file or directory"
        );
    }
}
