//! The iptables transport: reads with `iptables-save -t <table>`, writes
//! with one `iptables-restore -w --noflush` batch per address family
//! (atomic per table), using whatever `iptables` variant comes first on
//! `PATH` as the reference does. A missing tool is
//! [`crate::ErrorKind::Unavailable`]`(Iptables)`.
//!
//! Helpers for every rule set: [`Save`] (the saved rules of one table:
//! chains declared, rules of a chain, rules jumping to a chain),
//! [`split_words`] (a saved rule's arguments, unquoted), [`Batch`] (a
//! restore batch, which quotes every argument for the tool; comments the
//! reference writes with Go's `%q` are built with `skel::gojson::quote`).
//! The tools run through `skel::exec`; one that is not on `PATH`
//! (`skel::exec::Error::NotFound`) makes the backend unavailable.
//!
//! A batch that removes rules or chains returns once the kernel has
//! committed it, not when the tool exits: on nf_tables, the tool's exit
//! waits some 9 ms more for the kernel's cleanup of what was deleted (the
//! release of its netfilter socket flushes it), after the rules are gone.
//! Its commits are counted as nf_tables announces them
//! ([`cni_net::nftables::commits`]) and the tool is left to finish on its
//! own ([`skel::exec::Running::wait_or_leave`]). Whenever they cannot be
//! counted (iptables-legacy, a wrapper that forks the tool, a failure, no
//! nfnetlink) the exit is waited for, as for every other batch. Every tool
//! is waited for at most [`skel::deadline::timeout`], then killed with what
//! it started (iptables-legacy waits for `xtables.lock` as long as another
//! process holds it): the error names it and what it said.

use std::net::IpAddr;
use std::os::fd::AsFd;

use cni_net::nftables::commits::CommitWatch;
use skel::exec::{self, Command, Finish, Watch};

use crate::backend::Backend;
use crate::error::{Error, Result};

/// An address family, with its own tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn of(ip: &IpAddr) -> Family {
        if ip.is_ipv4() { Family::V4 } else { Family::V6 }
    }

    pub fn save_tool(self) -> &'static str {
        match self {
            Family::V4 => "iptables-save",
            Family::V6 => "ip6tables-save",
        }
    }

    pub fn restore_tool(self) -> &'static str {
        match self {
            Family::V4 => "iptables-restore",
            Family::V6 => "ip6tables-restore",
        }
    }

    /// The prefix length `iptables-save` prints for a single address.
    pub fn host_prefix(self) -> u8 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }
}

/// iptables is usable: `iptables-restore` is a file in a `PATH` directory
/// (see [`crate::select`]); no process is started.
pub fn usable() -> Result<()> {
    let tool = Family::V4.restore_tool();
    let path = std::env::var("PATH").unwrap_or_default();
    match skel::invoke::find_in_path(tool, &path) {
        Ok(_) => Ok(()),
        Err(_) => Err(tool_error(exec::Error::NotFound {
            program: tool.to_string(),
        })),
    }
}

/// A tool that could not run: a missing one makes the backend unavailable;
/// one killed at the deadline is named with what it said meanwhile.
fn tool_error(e: exec::Error) -> Error {
    match &e {
        exec::Error::NotFound { .. } => Error::unavailable(Backend::Iptables, e.to_string()),
        exec::Error::TimedOut { stderr, .. } => match String::from_utf8_lossy(stderr).trim() {
            "" => Error::failed(e.to_string()),
            said => Error::failed(format!("{e}: {said}")),
        },
        _ => Error::failed(e.to_string()),
    }
}

/// The tool's stdout, or its stderr (its exit status when silent).
fn finished(tool: &str, out: exec::Output) -> Result<String> {
    if out.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let why = match stderr.trim() {
        "" => exec::status_text(out.status),
        text => text.to_string(),
    };
    Err(Error::failed(format!("{tool}: {why}")))
}

/// The rules of `table` (`iptables-save -t <table>`).
pub fn save(family: Family, table: &str) -> Result<Save> {
    let tool = family.save_tool();
    let out = Command::new(tool)
        .args(["-t", table])
        .timeout(skel::deadline::timeout())
        .own_process_group()
        .run()
        .map_err(tool_error)?;
    finished(tool, out).map(Save::new)
}

/// Apply `batch` and wait; an empty batch runs nothing.
pub fn restore(family: Family, batch: &Batch) -> Result<()> {
    match start_restore(family, batch)? {
        Some(r) => r.wait(),
        None => Ok(()),
    }
}

/// Start applying `batch` without waiting for it (`None`: empty batch).
pub fn start_restore(family: Family, batch: &Batch) -> Result<Option<Restore>> {
    if batch.is_empty() {
        return Ok(None);
    }
    let tool = family.restore_tool();
    // Subscribed before the tool starts, so that none of its commits can
    // come first; adds gain nothing from it (the tool's exit does not wait
    // for them), nor does a process that may not leave the tool running.
    let watch = (batch.removes() && skel::orphans::reaped())
        .then(CommitWatch::open)
        .and_then(|w| w.ok());
    let run = Command::new(tool)
        .args(["-w", "--noflush"])
        .stdin(batch.text())
        .timeout(skel::deadline::timeout())
        .own_process_group()
        .start()
        .map_err(tool_error)?;
    let commits = batch.commits();
    Ok(Some(Restore {
        tool,
        run,
        watch: watch.map(|w| (w, commits)),
    }))
}

/// An `iptables-restore` run started by [`start_restore`].
#[derive(Debug)]
pub struct Restore {
    tool: &'static str,
    run: exec::Running,
    /// The commits of the tool being watched for, and how many there are.
    watch: Option<(CommitWatch, usize)>,
}

/// How a successful [`Restore`] ended.
#[derive(Debug)]
pub enum Ended {
    /// Every commit of the batch was seen; the tool was left to exit.
    Committed(exec::LeftRunning),
    /// The tool exited successfully.
    Exited,
}

impl Restore {
    pub fn wait(self) -> Result<()> {
        self.finish().map(drop)
    }

    /// Wait until the batch is committed or the tool exits, whichever
    /// comes first, and say which it was.
    pub fn finish(self) -> Result<Ended> {
        let Some((watch, commits)) = self.watch else {
            let out = self.run.wait().map_err(tool_error)?;
            return finished(self.tool, out).map(|_| Ended::Exited);
        };
        let (pid, mut seen) = (self.run.id(), 0);
        let counted = || match watch.commits_of(pid, self.tool) {
            Ok(n) if seen + n >= commits => Watch::Done,
            Ok(n) => {
                seen += n;
                Watch::Waiting
            }
            Err(_) => Watch::Broken,
        };
        match self.run.wait_or_leave(watch.as_fd(), counted) {
            Ok(Finish::Left(left)) => Ok(Ended::Committed(left)),
            Ok(Finish::Exited(out)) => finished(self.tool, out).map(|_| Ended::Exited),
            Err(e) => Err(tool_error(e)),
        }
    }
}

/// `iptables-save` output: one or more `*<table>` sections of chain
/// declarations (`:<chain> <policy> [p:b]`) and rules (`-A <chain> ...`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Save {
    text: String,
}

impl Save {
    pub fn new(text: String) -> Save {
        Save { text }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The lines of the `*<table>` section.
    fn section<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let mut inside = false;
        self.text.lines().filter(move |l| {
            if let Some(t) = l.strip_prefix('*') {
                inside = t.trim_end() == table;
                return false;
            }
            inside && *l != "COMMIT"
        })
    }

    /// The chains declared in `table`, built-in ones included.
    pub fn chains<'a>(&'a self, table: &'a str) -> Vec<&'a str> {
        self.section(table)
            .filter_map(|l| l.strip_prefix(':')?.split(' ').next())
            .collect()
    }

    pub fn chain_declared(&self, table: &str, chain: &str) -> bool {
        self.chains(table).contains(&chain)
    }

    /// The rules of `chain` in `table`, as saved (`-A <chain> ...`).
    pub fn rules<'a>(&'a self, table: &'a str, chain: &str) -> Vec<&'a str> {
        let prefix = format!("-A {chain} ");
        self.section(table)
            .filter(|l| l.starts_with(&prefix))
            .collect()
    }

    /// Every rule of `table` whose target is `chain` (`-j <chain>` or
    /// `-g <chain>`), whatever else it matches.
    pub fn rules_referencing<'a>(&'a self, table: &'a str, chain: &str) -> Vec<&'a str> {
        self.section(table)
            .filter(|l| l.starts_with("-A "))
            .filter(|l| {
                let w = split_words(l);
                w.windows(2)
                    .any(|p| (p[0] == "-j" || p[0] == "-g") && p[1] == chain)
            })
            .collect()
    }
}

/// The arguments of a saved rule, unquoted as `iptables-restore` reads
/// them: blanks separate words, `"` quotes, and inside quotes `\` takes
/// the next character literally.
pub fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut open, mut escaped) = (false, false, false);
    for c in line.chars() {
        if open {
            match (escaped, c) {
                (true, _) => {
                    cur.push(c);
                    escaped = false;
                }
                (false, '\\') => escaped = true,
                (false, '"') => open = false,
                (false, _) => cur.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                open = true;
                quoted = true;
            }
            ' ' | '\t' => {
                if !cur.is_empty() || quoted {
                    words.push(std::mem::take(&mut cur));
                }
                quoted = false;
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() || quoted {
        words.push(cur);
    }
    words
}

/// Whether the words of a saved rule are `want`: word for word, with
/// addresses (`<ip>`, `<ip>/<len>`, `<ip>:<port>`, `[<ip>]:<port>`)
/// compared as addresses, since `iptables-save` prints them with
/// `inet_ntop`, which writes some IPv6 addresses otherwise than Rust
/// (`::10.0.0.2` for `::a00:2`, `::ffff:10.0.0.2` for `::ffff:a00:2`).
pub fn same_words(saved: &[String], want: &[String]) -> bool {
    saved.len() == want.len()
        && saved
            .iter()
            .zip(want)
            .all(|(s, w)| s == w || address(s).is_some_and(|a| Some(a) == address(w)))
}

/// An address word: the address, its prefix length and port, if any.
fn address(w: &str) -> Option<(IpAddr, Option<u8>, Option<u16>)> {
    if let Some((ip, len)) = w.split_once('/') {
        return Some((ip.parse().ok()?, Some(len.parse().ok()?), None));
    }
    if let Ok(ip) = w.parse::<IpAddr>() {
        return Some((ip, None, None));
    }
    let sock: std::net::SocketAddr = w.parse().ok()?;
    Some((sock.ip(), None, Some(sock.port())))
}

/// One argument for a restore line: as is when it is a plain word, else
/// quoted with `"`, `\` and `'` escaped (as `iptables-save` writes it).
pub fn quote_arg(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| !c.is_whitespace() && !matches!(c, '"' | '\\' | '\''));
    if plain {
        return arg.to_string();
    }
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('"');
    for c in arg.chars() {
        if matches!(c, '"' | '\\' | '\'') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// An `iptables-restore --noflush` batch: per table, its lines in order,
/// then `COMMIT`. Arguments are quoted with [`quote_arg`]; a line break,
/// which the tool would read as the end of the line, becomes a space.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    tables: Vec<(String, Vec<String>)>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    pub fn is_empty(&self) -> bool {
        self.tables.iter().all(|(_, l)| l.is_empty())
    }

    /// Whether it deletes or flushes anything (`-D`, `-F`, `-X`).
    pub fn removes(&self) -> bool {
        let removal = |l: &String| ["-D ", "-F ", "-X "].iter().any(|op| l.starts_with(op));
        self.tables.iter().any(|(_, l)| l.iter().any(removal))
    }

    /// The commits applying it makes: one per table with lines (each
    /// `COMMIT` of the text). One that changes nothing makes none.
    pub fn commits(&self) -> usize {
        self.tables.iter().filter(|(_, l)| !l.is_empty()).count()
    }

    fn push(&mut self, table: &str, line: String) -> &mut Batch {
        match self.tables.iter_mut().find(|(t, _)| t == table) {
            Some((_, lines)) => lines.push(line),
            None => self.tables.push((table.to_string(), vec![line])),
        }
        self
    }

    fn rule(&mut self, table: &str, op: &str, chain: &str, args: &[&str]) -> &mut Batch {
        let mut line = format!("{op} {chain}");
        for a in args {
            line.push(' ');
            line.push_str(&quote_arg(a));
        }
        self.push(table, line)
    }

    /// `:<chain> - [0:0]`: create the chain, or flush it when it exists.
    pub fn declare(&mut self, table: &str, chain: &str) -> &mut Batch {
        self.push(table, format!(":{chain} - [0:0]"))
    }

    /// `-N <chain>`: create the chain; the batch fails when it exists
    /// (where [`Batch::declare`] would flush it).
    pub fn create_chain(&mut self, table: &str, chain: &str) -> &mut Batch {
        self.push(table, format!("-N {}", quote_arg(chain)))
    }

    /// `-A <chain> <args>`.
    pub fn append(&mut self, table: &str, chain: &str, args: &[&str]) -> &mut Batch {
        self.rule(table, "-A", chain, args)
    }

    /// `-I <chain> <pos> <args>` (positions start at 1).
    pub fn insert(&mut self, table: &str, chain: &str, pos: u32, args: &[&str]) -> &mut Batch {
        let pos = pos.to_string();
        let mut all = vec![pos.as_str()];
        all.extend_from_slice(args);
        self.rule(table, "-I", chain, &all)
    }

    /// `-D <chain> <args>`: the rule must exist, or the batch fails.
    pub fn delete(&mut self, table: &str, chain: &str, args: &[&str]) -> &mut Batch {
        self.rule(table, "-D", chain, args)
    }

    /// Delete a rule as [`Save`] printed it (`-A <chain> ...`).
    pub fn delete_saved(&mut self, table: &str, line: &str) -> &mut Batch {
        match line.strip_prefix("-A ") {
            Some(rest) => self.push(table, format!("-D {rest}")),
            None => self,
        }
    }

    /// `-F <chain>`.
    pub fn flush(&mut self, table: &str, chain: &str) -> &mut Batch {
        self.push(table, format!("-F {chain}"))
    }

    /// `-X <chain>`: the chain must be empty and unreferenced.
    pub fn delete_chain(&mut self, table: &str, chain: &str) -> &mut Batch {
        self.push(table, format!("-X {chain}"))
    }

    /// The batch as `iptables-restore` reads it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (table, lines) in self.tables.iter().filter(|(_, l)| !l.is_empty()) {
            out.push('*');
            out.push_str(table);
            out.push('\n');
            for l in lines {
                // A line break would end the line early in the tool.
                out.push_str(&l.replace(['\n', '\r'], " "));
                out.push('\n');
            }
            out.push_str("COMMIT\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn saved_addresses_compare_as_addresses() {
        let w = |s: &str| super::split_words(s);
        let same = |a: &str, b: &str| super::same_words(&w(a), &w(b));
        assert!(same(
            "-s ::10.0.0.0/120 -d ::ffff:10.0.0.1/128 -j DNAT --to-destination [::10.0.0.2]:80",
            "-s ::a00:0/120 -d ::ffff:a00:1/128 -j DNAT --to-destination [::a00:2]:80"
        ));
        assert!(same("-s 10.0.0.2/32 -j X", "-s 10.0.0.2/32 -j X"));
        for (a, b) in [
            ("-s ::10.0.0.2/128", "-s ::a00:3/128"),
            ("-s ::10.0.0.2/128", "-s ::a00:2/127"),
            ("-s ::10.0.0.2/128", "-s ::a00:2"),
            (
                "--to-destination [::10.0.0.2]:80",
                "--to-destination [::a00:2]:81",
            ),
            ("--to-destination 10.0.0.2:80", "--to-destination 10.0.0.2"),
            ("-j X", "-j X -j Y"),
            ("-j X", "-j Y"),
        ] {
            assert!(!same(a, b), "{a} vs {b}");
        }
    }

    use super::*;

    const SAVE: &str = "# Generated by iptables-save v1.8.9\n*filter\n:INPUT ACCEPT [0:0]\n:CNI-X - [0:0]\n-A INPUT -j CNI-X\nCOMMIT\n*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:CNI-fb21b640fde7fb73bc20647d - [0:0]\n\
-A POSTROUTING -s 10.33.0.2/32 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j CNI-fb21b640fde7fb73bc20647d\n\
-A POSTROUTING -s 10.33.0.3/32 -g CNI-fb21b640fde7fb73bc20647d\n\
-A CNI-fb21b640fde7fb73bc20647d -d 10.33.0.0/24 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j ACCEPT\nCOMMIT\n";

    #[test]
    fn a_missing_tool_is_an_unavailable_backend() {
        let e = Command::new("cnirs-no-such-tool").run().map_err(tool_error);
        let e = e.map(drop).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unavailable(Backend::Iptables));
        assert_eq!(
            e.to_string(),
            "exec: \"cnirs-no-such-tool\": executable file not found in $PATH"
        );
        let out = Command::new("sh").args(["-c", "exit 3"]).run().unwrap();
        let e = finished("sh", out).unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            (crate::ErrorKind::Failed, "sh: exit status 3")
        );
        let out = Command::new("sh")
            .args(["-c", "echo bad >&2; exit 1"])
            .run()
            .unwrap();
        assert_eq!(finished("sh", out).unwrap_err().to_string(), "sh: bad");
    }

    #[test]
    fn save_sections_chains_and_references() {
        let s = Save::new(SAVE.to_string());
        let chain = "CNI-fb21b640fde7fb73bc20647d";
        assert_eq!(s.chains("nat"), vec!["PREROUTING", "POSTROUTING", chain]);
        assert!(s.chain_declared("filter", "CNI-X"));
        assert!(!s.chain_declared("nat", "CNI-X"));
        assert_eq!(s.rules("nat", chain).len(), 1);
        assert_eq!(s.rules("nat", "POSTROUTING").len(), 2);
        assert_eq!(s.rules_referencing("nat", chain).len(), 2);
        assert!(s.rules_referencing("nat", "ACCEPT")[0].starts_with("-A CNI-fb21"));
        assert!(s.rules_referencing("nat", "CNI-X").is_empty());
        assert_eq!(
            s.rules_referencing("filter", "CNI-X"),
            vec!["-A INPUT -j CNI-X"]
        );
    }

    #[test]
    fn words_unquote_like_iptables_restore() {
        assert_eq!(
            split_words(r#"-A P -m comment --comment "name: \"mq\" id: \"c1\"" -j X"#),
            [
                "-A",
                "P",
                "-m",
                "comment",
                "--comment",
                r#"name: "mq" id: "c1""#,
                "-j",
                "X"
            ]
        );
        assert_eq!(split_words(r#"a  "" "b\\c" d"#), ["a", "", r"b\c", "d"]);
        assert_eq!(split_words(r#"x "it\'s""#), ["x", "it's"]);
    }

    #[test]
    fn quoting_round_trips() {
        for arg in [
            "plain",
            "",
            "two words",
            r#"name: "mq" id: "c1""#,
            r"back\slash",
            "it's",
        ] {
            let line = format!("-A C {} -j X", quote_arg(arg));
            assert_eq!(split_words(&line)[2], arg, "{line}");
        }
        assert_eq!(quote_arg("10.0.0.1/32"), "10.0.0.1/32");
    }

    #[test]
    fn batches_group_lines_by_table() {
        let mut b = Batch::new();
        assert!(b.is_empty());
        assert_eq!(b.text(), "");
        b.declare("nat", "CNI-A")
            .append(
                "nat",
                "CNI-A",
                &[
                    "-d",
                    "10.0.0.0/24",
                    "-m",
                    "comment",
                    "--comment",
                    "a b",
                    "-j",
                    "ACCEPT",
                ],
            )
            .insert("filter", "FORWARD", 1, &["-j", "CNI-FORWARD"])
            .delete_saved("nat", "-A POSTROUTING -s 10.0.0.2/32 -j CNI-A")
            .delete_saved("nat", "not a rule")
            .delete("nat", "POSTROUTING", &["-s", "10.0.0.3", "-j", "CNI-A"])
            .flush("nat", "CNI-A")
            .delete_chain("nat", "CNI-A")
            .create_chain("nat", "CNI-B");
        assert_eq!(
            b.text(),
            "*nat\n:CNI-A - [0:0]\n-A CNI-A -d 10.0.0.0/24 -m comment --comment \"a b\" -j ACCEPT\n\
-D POSTROUTING -s 10.0.0.2/32 -j CNI-A\n-D POSTROUTING -s 10.0.0.3 -j CNI-A\n-F CNI-A\n-X CNI-A\n-N CNI-B\nCOMMIT\n\
*filter\n-I FORWARD 1 -j CNI-FORWARD\nCOMMIT\n"
        );
        assert!(b.removes());
        assert_eq!(b.commits(), 2);
        let mut b = Batch::new();
        b.append("nat", "C", &["-m", "comment", "--comment", "a\nb"]);
        assert!(!b.removes());
        assert_eq!(b.commits(), 1);
        for op in [
            Batch::new().delete("filter", "C", &["-j", "X"]),
            Batch::new().flush("filter", "C"),
            Batch::new().delete_chain("filter", "C"),
        ] {
            assert!(op.removes(), "{}", op.text());
        }
        assert!(
            !Batch::new()
                .declare("nat", "C")
                .create_chain("nat", "D")
                .removes()
        );
        assert_eq!(
            b.text(),
            "*nat\n-A C -m comment --comment \"a b\"\nCOMMIT\n"
        );
    }
}
