//! What net/rpc carries between the dhcp plugin and its daemon, as gob
//! values of the reference's shapes: the `Request`/`Response` headers,
//! the argument `skel.CmdArgs` and the reply `types100.Result` (or an
//! empty struct).
//!
//! The type ids and field lists we send are the ones Go's encoder sends:
//! a request is byte for byte the Debian v1.1.1 plugin's (`CmdArgs` of cni
//! v1.0.1, six fields), a reply has the shapes of cni v1.3.0 (routes with
//! `Priority`, `Table`, `Scope`), which older plugins decode too: gob
//! matches fields by name and skips those it does not know.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;
use skel::types::{Cidr, IpConfig, Result1, Route};

use crate::gob::{BYTES, INT, STRING, TypeId, Types, UINT, Value, WireType};

pub const ALLOCATE: &str = "DHCP.Allocate";
pub const RELEASE: &str = "DHCP.Release";
/// Ours: release the leases of a network's attachments that are not in
/// the config's `cni.dev/valid-attachments`. The reference has no GC.
pub const GC: &str = "DHCP.GC";

/// The header type (`Request` one way, `Response` the other) and the
/// argument or reply types, as we number them.
pub const HEADER: TypeId = 65;
pub const CMD_ARGS: TypeId = 66;
pub const RESULT: TypeId = 66;
const INTERFACE: TypeId = 67;
const INTERFACES: TypeId = 68;
const IP_CONFIG: TypeId = 69;
const IP_NET: TypeId = 70;
const IP_CONFIGS: TypeId = 71;
const ROUTE: TypeId = 72;
const ROUTES: TypeId = 73;
const DNS: TypeId = 74;
const STRINGS: TypeId = 75;
pub const EMPTY: TypeId = 76;

/// The types a client sends.
pub fn client_types() -> Types {
    let mut t = Types::new();
    t.define(
        HEADER,
        WireType::strukt("Request", &[("ServiceMethod", STRING), ("Seq", UINT)]),
    );
    t.define(
        CMD_ARGS,
        WireType::strukt(
            "CmdArgs",
            &[
                ("ContainerID", STRING),
                ("Netns", STRING),
                ("IfName", STRING),
                ("Args", STRING),
                ("Path", STRING),
                ("StdinData", BYTES),
            ],
        ),
    );
    t
}

/// The types a server sends.
pub fn server_types() -> Types {
    let mut t = Types::new();
    t.define(
        HEADER,
        WireType::strukt(
            "Response",
            &[("ServiceMethod", STRING), ("Seq", UINT), ("Error", STRING)],
        ),
    );
    t.define(
        RESULT,
        WireType::strukt(
            "Result",
            &[
                ("CNIVersion", STRING),
                ("Interfaces", INTERFACES),
                ("IPs", IP_CONFIGS),
                ("Routes", ROUTES),
                ("DNS", DNS),
            ],
        ),
    );
    t.define(
        INTERFACE,
        WireType::strukt(
            "",
            &[
                ("Name", STRING),
                ("Mac", STRING),
                ("Mtu", INT),
                ("Sandbox", STRING),
                ("SocketPath", STRING),
                ("PciID", STRING),
            ],
        ),
    );
    t.define(
        INTERFACES,
        WireType::slice("[]*types100.Interface", INTERFACE),
    );
    t.define(
        IP_CONFIG,
        WireType::strukt(
            "",
            &[("Interface", INT), ("Address", IP_NET), ("Gateway", BYTES)],
        ),
    );
    t.define(
        IP_NET,
        WireType::strukt("IPNet", &[("IP", BYTES), ("Mask", BYTES)]),
    );
    t.define(
        IP_CONFIGS,
        WireType::slice("[]*types100.IPConfig", IP_CONFIG),
    );
    t.define(
        ROUTE,
        WireType::strukt(
            "",
            &[
                ("Dst", IP_NET),
                ("GW", BYTES),
                ("MTU", INT),
                ("AdvMSS", INT),
                ("Priority", INT),
                ("Table", INT),
                ("Scope", INT),
            ],
        ),
    );
    t.define(ROUTES, WireType::slice("[]*types.Route", ROUTE));
    t.define(
        DNS,
        WireType::strukt(
            "DNS",
            &[
                ("Nameservers", STRINGS),
                ("Domain", STRING),
                ("Search", STRINGS),
                ("Options", STRINGS),
            ],
        ),
    );
    t.define(STRINGS, WireType::slice("[]string", STRING));
    t.define(EMPTY, WireType::strukt("", &[]));
    t
}

/// A call's header: method and sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub seq: u64,
}

impl Request {
    pub fn to_value(&self) -> Value {
        Value::strukt(vec![
            ("ServiceMethod", Value::str(&self.method)),
            ("Seq", Value::Uint(self.seq)),
        ])
    }

    pub fn from_value(v: &Value) -> Request {
        Request {
            method: v.text("ServiceMethod"),
            seq: seq_of(v),
        }
    }
}

fn seq_of(v: &Value) -> u64 {
    match v.field("Seq") {
        Some(Value::Uint(u)) => *u,
        Some(Value::Int(i)) => *i as u64,
        _ => 0,
    }
}

/// A reply's header: the call's method and sequence number, and the
/// server's error text (empty on success).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub method: String,
    pub seq: u64,
    pub error: String,
}

impl Response {
    pub fn to_value(&self) -> Value {
        Value::strukt(vec![
            ("ServiceMethod", Value::str(&self.method)),
            ("Seq", Value::Uint(self.seq)),
            ("Error", Value::str(&self.error)),
        ])
    }

    pub fn from_value(v: &Value) -> Response {
        Response {
            method: v.text("ServiceMethod"),
            seq: seq_of(v),
            error: v.text("Error"),
        }
    }
}

/// `skel.CmdArgs`: the plugin's invocation, passed on whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CmdArgs {
    pub container_id: String,
    /// Absolute, as the plugin makes it (the daemon's working directory is
    /// not the plugin's).
    pub netns: String,
    pub ifname: String,
    /// `CNI_ARGS`, raw.
    pub args: String,
    pub path: String,
    /// The config, byte for byte as the plugin read it.
    pub stdin_data: Vec<u8>,
}

impl CmdArgs {
    pub fn to_value(&self) -> Value {
        Value::strukt(vec![
            ("ContainerID", Value::str(&self.container_id)),
            ("Netns", Value::str(&self.netns)),
            ("IfName", Value::str(&self.ifname)),
            ("Args", Value::str(&self.args)),
            ("Path", Value::str(&self.path)),
            ("StdinData", Value::Bytes(self.stdin_data.clone())),
        ])
    }

    /// By field name: the 6 fields of cni v1.0.1 and the 7 of v1.2+
    /// (`NetnsOverride`, unused here) decode alike.
    pub fn from_value(v: &Value) -> CmdArgs {
        CmdArgs {
            container_id: v.text("ContainerID"),
            netns: v.text("Netns"),
            ifname: v.text("IfName"),
            args: v.text("Args"),
            path: v.text("Path"),
            stdin_data: v.bytes("StdinData"),
        }
    }
}

/// Go's `net.IP` bytes: 4 for IPv4, as the Go daemon sends them.
fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    }
}

fn ip_net(net: &IpNetwork) -> Value {
    let ip = ip_bytes(net.ip());
    let bits = ip.len() as u32 * 8;
    let prefix = u32::from(net.prefix()).min(bits);
    let mask: Vec<u8> = (0..ip.len() as u32)
        .map(|i| {
            let ones = prefix.saturating_sub(i * 8).min(8);
            (0xffu16 << (8 - ones)) as u8
        })
        .collect();
    Value::strukt(vec![("IP", Value::Bytes(ip)), ("Mask", Value::Bytes(mask))])
}

/// The reply of `DHCP.Allocate` for `r`: addresses and routes (the daemon
/// fills nothing else; `CNIVersion` stays empty so that the plugin keeps
/// its own).
pub fn result_value(r: &Result1) -> Value {
    let ips = r
        .ips
        .iter()
        .map(|ip| {
            let mut f = Vec::new();
            if let Some(i) = ip.interface {
                f.push(("Interface", Value::Int(i as i64)));
            }
            f.push(("Address", ip_net(&ip.address.0)));
            if let Some(gw) = ip.gateway {
                f.push(("Gateway", Value::Bytes(ip_bytes(gw))));
            }
            Value::strukt(f)
        })
        .collect();
    let routes = r
        .routes
        .iter()
        .map(|rt| {
            let mut f = vec![("Dst", ip_net(&rt.dst.0))];
            if let Some(gw) = rt.gw {
                f.push(("GW", Value::Bytes(ip_bytes(gw))));
            }
            f.push(("MTU", Value::Int(rt.mtu)));
            f.push(("AdvMSS", Value::Int(rt.advmss)));
            f.push(("Priority", Value::Int(rt.priority)));
            if let Some(t) = rt.table {
                f.push(("Table", Value::Int(t)));
            }
            if let Some(s) = rt.scope {
                f.push(("Scope", Value::Int(s)));
            }
            Value::strukt(f)
        })
        .collect();
    Value::strukt(vec![
        ("IPs", Value::Slice(ips)),
        ("Routes", Value::Slice(routes)),
        ("DNS", Value::strukt(vec![])),
    ])
}

/// Go's `net.IP` from its bytes (4 or 16), canonical (a v4-mapped address
/// is IPv4, as Go prints it).
fn ip_from(b: &[u8]) -> Result<IpAddr, String> {
    match b.len() {
        4 => Ok(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))),
        16 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(b);
            Ok(IpAddr::V6(Ipv6Addr::from(o)).to_canonical())
        }
        n => Err(format!("an IP address of {n} bytes")),
    }
}

/// Go's `net.IPNet` as a prefix. A 16-byte mask of an IPv4 address covers
/// it in its last 4 bytes, as Go's `IPNet.String` reads it.
fn net_from(v: &Value) -> Result<IpNetwork, String> {
    let ip = ip_from(&v.bytes("IP"))?;
    let mut mask = v.bytes("Mask");
    if ip.is_ipv4() && mask.len() == 16 {
        mask.drain(..12);
    }
    let want = if ip.is_ipv4() { 4 } else { 16 };
    if mask.len() != want {
        return Err(format!("a mask of {} bytes for {ip}", mask.len()));
    }
    let bits: Vec<bool> = mask
        .iter()
        .flat_map(|b| (0..8).map(move |i| b & (0x80 >> i) != 0))
        .collect();
    let ones = bits.iter().take_while(|&&b| b).count();
    if bits[ones..].iter().any(|&b| b) {
        return Err(format!("a non-contiguous mask for {ip}"));
    }
    IpNetwork::new(ip, ones as u8).map_err(|e| e.to_string())
}

/// The reply of `DHCP.Allocate` as a result in the newest version.
pub fn result_from(v: &Value) -> Result<Result1, String> {
    let mut r = Result1 {
        cni_version: skel::version::CURRENT.to_string(),
        ..Default::default()
    };
    for ip in v.items("IPs") {
        let address = ip
            .field("Address")
            .map(net_from)
            .transpose()?
            .ok_or("an address without IP")?;
        let gateway = match ip.bytes("Gateway") {
            b if b.is_empty() => None,
            b => Some(ip_from(&b)?),
        };
        r.ips.push(IpConfig {
            address: Cidr(address),
            gateway,
            interface: ip.int("Interface").map(|i| i as usize),
        });
    }
    for rt in v.items("Routes") {
        let dst = rt
            .field("Dst")
            .map(net_from)
            .transpose()?
            .ok_or("a route without destination")?;
        let gw = match rt.bytes("GW") {
            b if b.is_empty() => None,
            b => Some(ip_from(&b)?),
        };
        r.routes.push(Route {
            advmss: rt.int("AdvMSS").unwrap_or(0),
            dst: Cidr(dst),
            gw,
            mtu: rt.int("MTU").unwrap_or(0),
            priority: rt.int("Priority").unwrap_or(0),
            scope: rt.int("Scope"),
            table: rt.int("Table"),
        });
    }
    Ok(r)
}

#[cfg(test)]
mod tests;
