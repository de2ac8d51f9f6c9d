//! The `cnitool` command line: flags and environment (like the Go tool's),
//! the container ID derived from the netns path, dispatch to [`Cni`], and
//! the one place that prints results and errors and picks the exit status.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::cache;
use crate::chain::{Attachment, Cni, Ran, RuntimeConf};
use crate::config::NetworkList;
use crate::error::{Error, Result};

pub const USAGE: &str = "\
usage: cnitool [flags] add|check|del NETWORK NETNS
       cnitool [flags] gc NETWORK [--valid CONTAINERID/IFNAME ...]
       cnitool [flags] status NETWORK
       cnitool [flags] validate NETWORK
       cnitool [flags] version PLUGIN

Runs the CNI network configuration NETWORK (a .conflist, or a .conf/.json,
found by name in the config directory) against the network namespace file
NETNS, the way a container runtime does, sharing the runtime's result cache.

commands:
  add       attach NETNS to NETWORK; prints the result JSON
  check     verify the attachment (CHECK, lists >= 0.4.0)
  del       detach (DEL, in reverse order, with the cached result)
  gc        delete cached attachments of NETWORK not listed with --valid,
            then send GC to the plugins (lists >= 1.1.0); without --valid
            every attachment of NETWORK in the cache is deleted
  status    ask every plugin whether it is ready (STATUS, lists >= 1.1.0)
  validate  check every plugin exists and supports the list's cniVersion
  version   print the VERSION answer of PLUGIN (a name in CNI_PATH or a path)

flags (a flag overrides the environment variable shown in brackets):
  --conf-dir DIR      config directory [NETCONFPATH], default /etc/cni/net.d
  --cni-path PATH     plugin directories, ':'-separated [CNI_PATH]
  -i, --ifname NAME   interface in the namespace [CNI_IFNAME], default eth0
  --args K=V;K2=V2    plugin arguments [CNI_ARGS]
  --cap-args JSON     capability arguments, a JSON object [CAP_ARGS]
  --cache-dir DIR     result cache, default /var/lib/cni
  --container-id ID   default cnitool-<hex of sha512(absolute NETNS)[:10]>
  --timeout SECONDS   kill a plugin running longer (default: no limit)
  --valid ID/IFNAME   gc: an attachment to keep (repeatable)
  -h, --help          this text

output: add prints the result JSON, version and validate print JSON, other
commands print nothing on success. On failure stdout holds one CNI error
object {\"code\",\"msg\",\"details\"} (the plugin's code when a plugin
reported it) and stderr a readable message.

exit status:
  0  success
  1  a plugin failed: it reported an error, could not be run, timed out,
     crashed or printed an invalid result; or STATUS reported not ready
  2  usage error (arguments, flags or environment values)
  3  configuration error (network not found or invalid, plugin missing or
     not supporting the list's cniVersion)
  4  result cache could not be read or written
";

/// Parsed command line.
#[derive(Debug, Default)]
struct Cli {
    command: String,
    positional: Vec<String>,
    conf_dir: Option<String>,
    cni_path: Option<String>,
    ifname: Option<String>,
    args: Option<String>,
    cap_args: Option<String>,
    cache_dir: Option<String>,
    container_id: Option<String>,
    timeout: Option<String>,
    valid: Vec<String>,
    help: bool,
}

fn parse_cli(argv: &[String]) -> Result<Cli> {
    let mut cli = Cli::default();
    let mut words = Vec::new();
    let mut it = argv.iter();
    let mut flags_done = false;
    while let Some(arg) = it.next() {
        if flags_done || !arg.starts_with('-') || arg == "-" {
            words.push(arg.clone());
            continue;
        }
        if arg == "--" {
            flags_done = true;
            continue;
        }
        if arg == "-h" || arg == "--help" {
            cli.help = true;
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let slot = match name {
            "--conf-dir" => &mut cli.conf_dir,
            "--cni-path" => &mut cli.cni_path,
            "-i" | "--ifname" => &mut cli.ifname,
            "--args" => &mut cli.args,
            "--cap-args" => &mut cli.cap_args,
            "--cache-dir" => &mut cli.cache_dir,
            "--container-id" => &mut cli.container_id,
            "--timeout" => &mut cli.timeout,
            "--valid" => {
                let v = flag_value(name, inline, &mut it)?;
                cli.valid.push(v);
                continue;
            }
            _ => return Err(Error::usage(format!("unknown flag {name}"))),
        };
        *slot = Some(flag_value(name, inline, &mut it)?);
    }
    let mut words = words.into_iter();
    cli.command = words.next().unwrap_or_default();
    cli.positional = words.collect();
    Ok(cli)
}

fn flag_value(
    name: &str,
    inline: Option<String>,
    it: &mut std::slice::Iter<'_, String>,
) -> Result<String> {
    match inline {
        Some(v) => Ok(v),
        None => it
            .next()
            .cloned()
            .ok_or_else(|| Error::usage(format!("flag {name} needs a value"))),
    }
}

/// Settings after flags and environment are combined.
struct Settings {
    conf_dir: PathBuf,
    cni_path: Vec<String>,
    ifname: String,
    args: Vec<(String, String)>,
    cap_args: Map<String, Value>,
    cache_dir: PathBuf,
    timeout: Option<Duration>,
}

fn settings(cli: &Cli, env: &dyn Fn(&str) -> Option<String>) -> Result<Settings> {
    let pick = |flag: &Option<String>, var: &str| -> String {
        flag.clone().or_else(|| env(var)).unwrap_or_default()
    };
    let conf_dir = pick(&cli.conf_dir, "NETCONFPATH");
    let ifname = pick(&cli.ifname, "CNI_IFNAME");
    let args = pick(&cli.args, "CNI_ARGS");
    let cap_args = pick(&cli.cap_args, "CAP_ARGS");
    let cache_dir = cli.cache_dir.clone().unwrap_or_default();
    Ok(Settings {
        conf_dir: PathBuf::from(if conf_dir.is_empty() {
            "/etc/cni/net.d".to_string()
        } else {
            conf_dir
        }),
        cni_path: pick(&cli.cni_path, "CNI_PATH")
            .split(':')
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .collect(),
        ifname: if ifname.is_empty() {
            "eth0".into()
        } else {
            ifname
        },
        args: parse_cni_args(&args)?,
        cap_args: parse_cap_args(&cap_args)?,
        cache_dir: PathBuf::from(if cache_dir.is_empty() {
            cache::DEFAULT_DIR.to_string()
        } else {
            cache_dir
        }),
        timeout: parse_timeout(cli.timeout.as_deref())?,
    })
}

/// `K=V;K2=V2`; like the Go tool, every pair needs a non-empty key and value.
pub fn parse_cni_args(s: &str) -> Result<Vec<(String, String)>> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    s.split(';')
        .map(|pair| {
            let kv: Vec<&str> = pair.split('=').collect();
            match kv.as_slice() {
                [k, v] if !k.is_empty() && !v.is_empty() => Ok((k.to_string(), v.to_string())),
                _ => Err(Error::usage(format!("invalid CNI_ARGS pair {pair:?}"))),
            }
        })
        .collect()
}

/// Capability args: a JSON object (`null` means none).
pub fn parse_cap_args(s: &str) -> Result<Map<String, Value>> {
    if s.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(Error::usage(format!(
            "invalid CAP_ARGS: expected a JSON object, found {}",
            skel::gojson::kind(&other)
        ))),
        Err(e) => Err(Error::usage(format!("invalid CAP_ARGS: {e}"))),
    }
}

fn parse_timeout(s: Option<&str>) -> Result<Option<Duration>> {
    let Some(s) = s else { return Ok(None) };
    let secs: f64 = s
        .parse()
        .map_err(|_| Error::usage(format!("invalid --timeout {s:?}: expected seconds")))?;
    if !(0.0..=1e9).contains(&secs) {
        return Err(Error::usage(format!(
            "invalid --timeout {s:?}: expected seconds"
        )));
    }
    Ok((secs > 0.0).then(|| Duration::from_secs_f64(secs)))
}

/// Go's `filepath.Abs`: join with the working directory, then clean
/// lexically (symlinks are not resolved, so the ID matches the Go tool's).
pub fn abs_path(p: &str) -> Result<String> {
    let joined = if p.starts_with('/') {
        PathBuf::from(p)
    } else {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::usage(format!("get working directory: {}", skel::io_text(&e))))?;
        cwd.join(p)
    };
    let mut parts: Vec<String> = Vec::new();
    for c in Path::new(&joined).components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

/// `cnitool-` + hex of the first 10 bytes of sha512(absolute netns path).
pub fn container_id_for(abs_netns: &str) -> String {
    format!(
        "cnitool-{}",
        skel::sha512::hex(&skel::sha512::digest(abs_netns.as_bytes())[..10])
    )
}

fn parse_valid(items: &[String]) -> Result<Vec<Attachment>> {
    items
        .iter()
        .map(|s| match s.split('/').collect::<Vec<_>>().as_slice() {
            [id, ifname] if !id.is_empty() && !ifname.is_empty() => Ok(Attachment {
                container_id: id.to_string(),
                ifname: ifname.to_string(),
            }),
            _ => Err(Error::usage(format!(
                "invalid --valid {s:?}: expected CONTAINERID/IFNAME"
            ))),
        })
        .collect()
}

fn want_args(cli: &Cli, names: &[&str]) -> Result<()> {
    if cli.positional.len() != names.len() {
        return Err(Error::usage(format!(
            "{} needs {}, got {} argument(s)",
            cli.command,
            names.join(" "),
            cli.positional.len()
        )));
    }
    Ok(())
}

/// What a successful command prints on stdout.
enum Printed {
    Nothing,
    Json(String),
}

fn dispatch(cli: &Cli, env: &dyn Fn(&str) -> Option<String>) -> Result<Printed> {
    let arity: &[&str] = match cli.command.as_str() {
        "add" | "check" | "del" => &["NETWORK", "NETNS"],
        "gc" | "status" | "validate" => &["NETWORK"],
        "version" => &["PLUGIN"],
        "" => return Err(Error::usage("no command given")),
        other => return Err(Error::usage(format!("unknown command {other:?}"))),
    };
    want_args(cli, arity)?;
    if !cli.valid.is_empty() && cli.command != "gc" {
        return Err(Error::usage("--valid is only for gc"));
    }
    let s = settings(cli, env)?;
    let needs_path =
        !(cli.command == "version" && cli.positional.first().is_some_and(|p| p.contains('/')));
    if needs_path && s.cni_path.is_empty() {
        return Err(Error::usage(
            "no plugin directories: set CNI_PATH or --cni-path",
        ));
    }
    let mut cni = Cni::new(s.cni_path.clone(), s.cache_dir.clone());
    cni.exec.timeout = s.timeout;
    let load = |name: &str| NetworkList::load(&s.conf_dir, name);

    match cli.command.as_str() {
        "add" | "check" | "del" => {
            let list = load(&cli.positional[0])?;
            let netns = abs_path(&cli.positional[1])?;
            let rt = RuntimeConf {
                container_id: cli
                    .container_id
                    .clone()
                    .unwrap_or_else(|| container_id_for(&netns)),
                netns,
                ifname: s.ifname.clone(),
                args: s.args.clone(),
                capability_args: s.cap_args.clone(),
            };
            match cli.command.as_str() {
                "add" => {
                    let result = cni.add(&list, &rt).inspect_err(|e| {
                        if e.kind == crate::error::Kind::Plugin {
                            // libcni leaves this to the runtime; say so.
                            eprintln!(
                                "cnitool: ADD failed part way; run `cnitool del` with the same arguments to undo what the plugins set up"
                            );
                        }
                    })?;
                    Ok(Printed::Json(result.to_json_pretty()))
                }
                "check" => {
                    if cni.check(&list, &rt)? == Ran::Disabled {
                        eprintln!(
                            "cnitool: network {:?} sets disableCheck; nothing checked",
                            list.name
                        );
                    }
                    Ok(Printed::Nothing)
                }
                _ => cni.del(&list, &rt).map(|()| Printed::Nothing),
            }
        }
        "gc" => {
            let valid = parse_valid(&cli.valid)?;
            let list = load(&cli.positional[0])?;
            let report = cni.gc(&list, &valid)?;
            if report.disabled {
                eprintln!(
                    "cnitool: network {:?} sets disableGC; nothing collected",
                    list.name
                );
            }
            for a in &report.deleted {
                eprintln!(
                    "cnitool: deleted stale attachment {}/{}",
                    a.container_id, a.ifname
                );
            }
            Ok(Printed::Nothing)
        }
        "status" => {
            let list = load(&cli.positional[0])?;
            if cni.status(&list)? == Ran::TooOld {
                eprintln!(
                    "cnitool: network {:?} has cniVersion {:?}; STATUS needs 1.1.0, nothing asked",
                    list.name, list.cni_version
                );
            }
            Ok(Printed::Nothing)
        }
        "version" => Ok(Printed::Json(cni.version(&cli.positional[0])?.to_json())),
        "validate" => {
            let list = load(&cli.positional[0])?;
            let infos = cni.validate_list(&list)?;
            let mut caps: Vec<&String> = list
                .plugins
                .iter()
                .flat_map(|p| p.capabilities.iter().filter(|(_, on)| **on).map(|(c, _)| c))
                .collect();
            caps.sort();
            caps.dedup();
            let plugins: Vec<Value> = list
                .plugins
                .iter()
                .zip(&infos)
                .map(|(p, i)| serde_json::json!({"type": p.plugin_type, "supportedVersions": i.supported_versions}))
                .collect();
            let out = serde_json::json!({
                "name": list.name,
                "cniVersion": list.cni_version,
                "plugins": plugins,
                "capabilities": caps,
            });
            Ok(Printed::Json(skel::gojson::marshal_indent(&out)))
        }
        other => Err(Error::usage(format!("unknown command {other:?}"))),
    }
}

/// Run the tool; returns the exit status.
pub fn run(argv: &[String], env: &dyn Fn(&str) -> Option<String>) -> i32 {
    let outcome = parse_cli(argv).and_then(|cli| {
        if cli.help {
            print!("{USAGE}");
            return Ok(Printed::Nothing);
        }
        dispatch(&cli, env)
    });
    match outcome {
        Ok(Printed::Nothing) => 0,
        Ok(Printed::Json(s)) => {
            println!("{s}");
            0
        }
        Err(e) => {
            println!("{}", e.to_json());
            eprintln!("cnitool: {e}");
            if e.kind == crate::error::Kind::Usage {
                eprintln!("run `cnitool --help` for usage");
            }
            e.kind.exit_code()
        }
    }
}

/// The binary's entry point.
pub fn main() -> ! {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let code = run(&argv, &|k| std::env::var(k).ok());
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_id_matches_go_cnitool() {
        // sha512("/var/run/netns/test") computed independently with sha512sum.
        let out = std::process::Command::new("sh")
            .args(["-c", "printf %s /var/run/netns/test | sha512sum"])
            .output()
            .unwrap();
        let hex = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            container_id_for("/var/run/netns/test"),
            format!("cnitool-{}", &hex[..20])
        );
    }

    #[test]
    fn abs_path_cleans_like_go() {
        assert_eq!(abs_path("/run//netns/./x/../y/").unwrap(), "/run/netns/y");
        assert_eq!(abs_path("/..").unwrap(), "/");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(abs_path("ns").unwrap(), format!("{}/ns", cwd.display()));
    }

    #[test]
    fn cni_args_like_go_cnitool() {
        assert_eq!(
            parse_cni_args("A=1;B=2").unwrap(),
            vec![("A".into(), "1".into()), ("B".into(), "2".into())]
        );
        assert!(parse_cni_args("A=1;").is_err());
        assert!(parse_cni_args("A=").is_err());
        assert!(parse_cni_args("A=1=2").is_err());
        assert!(parse_cni_args("").unwrap().is_empty());
    }

    #[test]
    fn flags_anywhere_and_inline_values() {
        let argv: Vec<String> = [
            "--ifname=net1",
            "add",
            "n",
            "--timeout",
            "2.5",
            "/ns",
            "--",
            "-x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let cli = parse_cli(&argv).unwrap();
        assert_eq!(cli.command, "add");
        assert_eq!(cli.positional, vec!["n", "/ns", "-x"]);
        assert_eq!(cli.ifname.as_deref(), Some("net1"));
        assert_eq!(
            parse_timeout(cli.timeout.as_deref()).unwrap(),
            Some(Duration::from_millis(2500))
        );
        assert!(parse_cli(&["--bogus".to_string()]).is_err());
        assert!(parse_cli(&["--args".to_string()]).is_err());
        assert!(parse_timeout(Some("-1")).is_err());
        assert_eq!(parse_timeout(Some("0")).unwrap(), None);
    }

    #[test]
    fn cap_args_must_be_an_object() {
        assert!(
            parse_cap_args(r#"{"portMappings":[]}"#)
                .unwrap()
                .contains_key("portMappings")
        );
        assert!(parse_cap_args("[1]").is_err());
        assert!(parse_cap_args("{").is_err());
        assert!(parse_cap_args("null").unwrap().is_empty());
    }

    #[test]
    fn valid_attachments() {
        assert_eq!(
            parse_valid(&["c1/eth0".into()]).unwrap(),
            vec![Attachment {
                container_id: "c1".into(),
                ifname: "eth0".into()
            }]
        );
        assert!(parse_valid(&["c1".into()]).is_err());
        assert!(parse_valid(&["c1/a/b".into()]).is_err());
    }
}
