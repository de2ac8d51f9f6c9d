//! A runtime's default network list run through our `cnitool` on our
//! binaries alone, in a [`Lab`]'s host namespace: the fixture conflist with
//! its name, IPAM and portmap state directories made the test's own.

use serde_json::{Value, json};
use testsupport::{TempDir, TestNetns, cni_path_with, links, plugin_bin, unique_name};

use super::Lab;

pub struct Chain {
    pub lab: Lab,
    pub name: String,
    pub ipam: TempDir,
    conf_dir: TempDir,
    cache: TempDir,
    path: TempDir,
}

impl Chain {
    /// `fixture` (a file under testdata/) with the workspace binaries
    /// `plugins` on `CNI_PATH`; `adapt` changes the list further (bridge
    /// names, say).
    pub fn new(tag: &str, fixture: &str, plugins: &[&str], adapt: impl Fn(&mut Value)) -> Chain {
        let lab = Lab::new(tag);
        let file = format!("{}/testdata/{fixture}", env!("CARGO_MANIFEST_DIR"));
        let mut list: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let name = unique_name("cnirsnet");
        let ipam = TempDir::new("chainipam");
        list["name"] = json!(name);
        for plugin in list["plugins"].as_array_mut().unwrap() {
            if plugin.get("ipam").is_some() {
                plugin["ipam"]["dataDir"] = json!(ipam.to_str());
            }
            if plugin["type"] == "portmap" {
                plugin["dataDir"] = json!(lab.records.to_str());
            }
        }
        adapt(&mut list);
        let conf_dir = TempDir::new("chainconf");
        std::fs::write(conf_dir.join(fixture), list.to_string()).unwrap();
        Chain {
            lab,
            name,
            ipam,
            conf_dir,
            cache: TempDir::new("chaincache"),
            path: cni_path_with(plugins),
        }
    }

    /// `cnitool cmd` for the container in `c` with the runtime's
    /// capability arguments `caps`; stdout.
    pub fn cnitool(&self, cmd: &str, c: &TestNetns, caps: &Value) -> String {
        let (ok, stdout) = self.try_cnitool(cmd, c, caps);
        assert!(ok, "cnitool {cmd}: {stdout}");
        stdout
    }

    /// Whether `cnitool cmd` succeeded; stdout, then stderr.
    pub fn try_cnitool(&self, cmd: &str, c: &TestNetns, caps: &Value) -> (bool, String) {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", self.lab.host.ns.name()])
            .arg(plugin_bin("cnitool"))
            .args([
                "--cache-dir",
                self.cache.to_str(),
                cmd,
                &self.name,
                c.path(),
            ])
            .env("NETCONFPATH", self.conf_dir.path())
            .env("CNI_PATH", self.path.path())
            .env("CAP_ARGS", caps.to_string())
            // The firewall plugin, its backend unset, asks the system bus
            // whether firewalld runs: never the machine's own.
            .env(
                "DBUS_SYSTEM_BUS_ADDRESS",
                "unix:path=/nonexistent/cnirs-no-bus",
            )
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return (false, stdout + &String::from_utf8_lossy(&out.stderr));
        }
        (true, stdout)
    }

    /// A new container attached with `caps`; its namespace and result.
    pub fn container(&self, caps: &Value) -> (TestNetns, Value) {
        let c = TestNetns::new("chc");
        c.exec(&["ip", "link", "set", "lo", "up"]);
        let result: Value = serde_json::from_str(&self.cnitool("add", &c, caps)).unwrap();
        (c, result)
    }

    /// The network's portmap rules in the host namespace, either backend.
    pub fn rules(&self) -> Vec<String> {
        let net = format!("name: \\\"{}\\\"", self.name);
        let mut rules = self
            .lab
            .host
            .rules(std::slice::from_ref(&self.name), &[net]);
        rules.retain(|r| r.starts_with("-A") || !r.starts_with('-'));
        rules
    }

    /// Host links other than the lab's own (loopback, the outside veth)
    /// and `keep`.
    pub fn links_but(&self, keep: &[&str]) -> Vec<String> {
        links(&self.lab.host.ns)
            .into_iter()
            .map(|(name, _)| name)
            .filter(|n| n != "lo" && !n.starts_with("cnirso") && !keep.contains(&n.as_str()))
            .collect()
    }

    /// The network's lease files.
    pub fn leases(&self) -> Vec<(String, String)> {
        testsupport::lease_files(&self.ipam.join(&self.name))
    }
}
