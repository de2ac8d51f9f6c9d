//! A private system bus and a real firewalld on it, for the firewalld
//! tests, kept away from the machine's own firewall:
//!
//! - [`PrivateBus`]: a `dbus-daemon` of type system listening on a socket
//!   in a temp dir, policy allowing everything (the tests run as root);
//! - [`PrivateFirewalld`]: Debian's `firewalld` connected to that bus,
//!   running in a throwaway network namespace (its nf_tables rules land
//!   there) and a private mount namespace with fresh tmpfs on `/run` and
//!   `/var/log` and its system config in a temp dir, so nothing of it
//!   outlives the test.
//!
//! Both daemons are killed on drop, so a failing test cleans up too.

use std::process::{Child, Command, Stdio};

use crate::{TempDir, TestNetns, require_root};

/// A `dbus-daemon` on a socket of its own; killed on drop.
pub struct PrivateBus {
    child: Child,
    address: String,
    dir: TempDir,
}

const BUS_CONF: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=@SOCKET@</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"#;

impl PrivateBus {
    pub fn start() -> PrivateBus {
        require_root();
        let dir = TempDir::new("bus");
        let socket = dir.join("bus");
        let socket = socket.to_str().unwrap_or_default().to_string();
        let conf = dir.join("bus.conf");
        std::fs::write(&conf, BUS_CONF.replace("@SOCKET@", &socket))
            .unwrap_or_else(|e| panic!("write {}: {e}", conf.display()));
        let child = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", conf.display()))
            .args(["--nofork", "--nopidfile"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start dbus-daemon (apt-get install dbus): {e}"));
        let bus = PrivateBus {
            child,
            address: format!("unix:path={socket}"),
            dir,
        };
        let up = crate::retry(|| std::os::unix::net::UnixStream::connect(&socket).is_ok());
        assert!(up, "dbus-daemon did not listen on {socket}");
        bus
    }

    /// `unix:path=...`, for `DBUS_SYSTEM_BUS_ADDRESS`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// A temp dir that lives as long as the bus.
    pub fn dir(&self) -> &TempDir {
        &self.dir
    }

    /// `firewall-cmd <args>` talking to this bus: (success, stdout + stderr).
    pub fn firewall_cmd(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new("firewall-cmd")
            .args(args)
            .env("DBUS_SYSTEM_BUS_ADDRESS", &self.address)
            .output()
            .unwrap_or_else(|e| panic!("run firewall-cmd: {e}"));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text.trim().to_string())
    }
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// firewalld on a [`PrivateBus`], in a namespace of its own; killed on
/// drop (its namespace, and with it its rules, go with the [`TestNetns`]).
pub struct PrivateFirewalld {
    child: Option<Child>,
    netns: TestNetns,
}

/// What runs in the new mount namespace before firewalld: fresh `/run`
/// (its temp files, no pid file) and `/var/log`, so nothing is left on
/// the machine.
const START: &str = "mount -t tmpfs cnirsrun /run && mount -t tmpfs cnirslog /var/log && \
                     exec firewalld --nofork --nopid --log-target console --system-config \"$1\"";

impl PrivateFirewalld {
    /// Start firewalld on `bus` and wait until its name has an owner.
    pub fn start(bus: &PrivateBus) -> PrivateFirewalld {
        let netns = TestNetns::new("fwd");
        let config = bus.dir().join("firewalld");
        std::fs::create_dir_all(&config).unwrap_or_else(|e| panic!("create config dir: {e}"));
        std::fs::write(
            config.join("firewalld.conf"),
            "DefaultZone=public\nFirewallBackend=nftables\nCleanupOnExit=yes\n",
        )
        .unwrap_or_else(|e| panic!("write firewalld.conf: {e}"));
        let log = std::fs::File::create(bus.dir().join("firewalld.log"))
            .unwrap_or_else(|e| panic!("create firewalld.log: {e}"));
        // `ip netns exec` and `unshare` exec in turn, and so does sh:
        // the child is firewalld itself.
        let child = Command::new("ip")
            .args(["netns", "exec", netns.name()])
            .args(["unshare", "--mount", "--propagation", "private"])
            .args(["sh", "-c", START, "sh"])
            .arg(&config)
            .env("DBUS_SYSTEM_BUS_ADDRESS", bus.address())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start firewalld (apt-get install firewalld): {e}"));
        let fwd = PrivateFirewalld {
            child: Some(child),
            netns,
        };
        let up = crate::retry(|| bus.firewall_cmd(&["--state"]).1 == "running");
        let log = std::fs::read_to_string(bus.dir().join("firewalld.log")).unwrap_or_default();
        assert!(up, "firewalld did not come up on the private bus:\n{log}");
        fwd
    }

    /// The namespace firewalld's rules are in.
    pub fn netns(&self) -> &TestNetns {
        &self.netns
    }

    /// Kill firewalld now and wait for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for PrivateFirewalld {
    fn drop(&mut self) {
        self.stop();
    }
}
