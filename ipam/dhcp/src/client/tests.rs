//! The exchanges against a scripted server: what the client sends, what
//! it accepts and ignores.

use std::cell::Cell;
use std::collections::VecDeque;

use super::*;

const CHADDR: [u8; 6] = [2, 0, 0, 0, 0, 7];
const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const SERVER: To = To::Server {
    ip: Ipv4Addr::new(10, 240, 0, 1),
    mac: SERVER_MAC,
};

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// A server played by `answer`: each message sent gets the replies it
/// returns; `sent` records every message with its source and target.
struct Scripted<F: FnMut(&Message) -> Vec<Message>> {
    answer: F,
    queue: VecDeque<Reply>,
    sent: Vec<(Message, Ipv4Addr, To)>,
}

impl<F: FnMut(&Message) -> Vec<Message>> Wire for Scripted<F> {
    fn send(&mut self, msg: &Message, src: Ipv4Addr, to: To) -> Result<()> {
        // Through the wire format, as a server would see it.
        let msg = Message::parse(&msg.encode()).unwrap();
        for r in (self.answer)(&msg) {
            self.queue.push_back(Reply {
                msg: r,
                mac: SERVER_MAC,
            });
        }
        self.sent.push((msg, src, to));
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Reply>> {
        match self.queue.pop_front() {
            Some(r) => Ok(Some(r)),
            None => {
                std::thread::sleep(timeout);
                Ok(None)
            }
        }
    }
}

fn scripted<F: FnMut(&Message) -> Vec<Message>>(answer: F) -> Scripted<F> {
    Scripted {
        answer,
        queue: VecDeque::new(),
        sent: Vec::new(),
    }
}

/// A reply of `kind` to `m` offering `addr`, from server 10.240.0.1.
fn reply(m: &Message, kind: u8, addr: &str) -> Message {
    let mut r = Message::request(kind, m.xid, m.chaddr);
    r.op = BOOTREPLY;
    r.yiaddr = ip(addr);
    r.set(opt::SERVER_ID, &[10, 240, 0, 1]);
    r.set(opt::SUBNET_MASK, &[255, 255, 255, 0]);
    r.set(opt::LEASE_TIME, &120u32.to_be_bytes());
    r
}

/// A well-behaved server: offers 10.240.0.5, acknowledges requests.
fn server(m: &Message) -> Vec<Message> {
    match m.kind() {
        Some(kind::DISCOVER) => vec![reply(m, kind::OFFER, "10.240.0.5")],
        Some(kind::REQUEST) => vec![reply(m, kind::ACK, "10.240.0.5")],
        _ => vec![],
    }
}

fn params() -> Params {
    Params {
        timeout: Duration::from_millis(300),
        ..Params::default()
    }
}

fn client<'a, W: Wire>(
    wire: W,
    options: &'a Options,
    params: Params,
    stopped: &'a dyn Fn() -> bool,
) -> Client<'a, W> {
    Client {
        wire,
        ifname: "eth0",
        chaddr: CHADDR,
        client_id: b"ctrA/net/eth0",
        options,
        params,
        stopped,
    }
}

fn with_client<W: Wire, T>(
    wire: W,
    options: &Options,
    f: impl FnOnce(&mut Client<'_, W>) -> T,
) -> T {
    let never = || false;
    f(&mut client(wire, options, params(), &never))
}

fn options() -> Options {
    Options {
        send: vec![(opt::HOST_NAME, b"pod-a".to_vec())],
        request: vec![3, 1],
    }
}

#[test]
fn discover_offer_request_ack() {
    let mut wire = scripted(server);
    let o = options();
    let r = with_client(&mut wire, &o, |c| c.acquire(None)).unwrap();
    assert_eq!(r.msg.kind(), Some(kind::ACK));
    assert_eq!(r.mac, SERVER_MAC);
    let [(d, d_src, d_to), (q, q_src, q_to)] = &wire.sent[..] else {
        panic!("{:?}", wire.sent);
    };
    assert_eq!(
        (d.kind(), *d_src, *d_to),
        (Some(kind::DISCOVER), Ipv4Addr::UNSPECIFIED, To::Broadcast)
    );
    assert_eq!(d.get(opt::CLIENT_ID), Some(&b"\0ctrA/net/eth0"[..]));
    assert_eq!(d.get(opt::HOST_NAME), Some(&b"pod-a"[..]));
    assert_eq!(d.get(opt::PARAMETER_LIST), Some(&[3u8, 1][..]));
    assert_eq!(d.chaddr, CHADDR);
    assert!(!d.broadcast);
    assert_eq!(
        (q.kind(), *q_src, *q_to),
        (Some(kind::REQUEST), Ipv4Addr::UNSPECIFIED, To::Broadcast)
    );
    assert_eq!(q.xid, d.xid);
    assert_eq!(q.ip_opt(opt::REQUESTED_IP), Some(ip("10.240.0.5")));
    assert_eq!(q.ip_opt(opt::SERVER_ID), Some(ip("10.240.0.1")));
    assert_eq!(q.ciaddr, Ipv4Addr::UNSPECIFIED);
}

#[test]
fn the_broadcast_flag_is_set_when_configured() {
    let mut wire = scripted(server);
    let o = options();
    let never = || false;
    let broadcast = Params {
        broadcast: true,
        ..params()
    };
    client(&mut wire, &o, broadcast, &never)
        .acquire(None)
        .unwrap();
    assert!(wire.sent.iter().all(|(m, _, _)| m.broadcast));
}

#[test]
fn a_provided_client_identifier_replaces_ours_but_not_in_the_release() {
    let mut wire = scripted(server);
    let o = Options {
        send: vec![(opt::CLIENT_ID, b"\x01mine".to_vec())],
        request: vec![3, 1],
    };
    with_client(&mut wire, &o, |c| {
        c.acquire(None).unwrap();
        c.release(ip("10.240.0.5"), ip("10.240.0.1"), SERVER)
            .unwrap();
    });
    assert_eq!(wire.sent[0].0.get(opt::CLIENT_ID), Some(&b"\x01mine"[..]));
    assert_eq!(
        wire.sent[2].0.get(opt::CLIENT_ID),
        Some(&b"\0ctrA/net/eth0"[..])
    );
}

#[test]
fn replies_for_others_are_ignored() {
    let mut wire = scripted(|m: &Message| {
        let mut other_xid = reply(m, kind::OFFER, "10.240.0.9");
        other_xid.xid ^= 1;
        let mut other_mac = reply(m, kind::OFFER, "10.240.0.8");
        other_mac.chaddr = [9; 6];
        let mut not_a_reply = reply(m, kind::OFFER, "10.240.0.7");
        not_a_reply.op = crate::packet::BOOTREQUEST;
        let mut ours = server(m);
        let mut out = vec![other_xid, other_mac, not_a_reply];
        out.append(&mut ours);
        out
    });
    let o = options();
    let r = with_client(&mut wire, &o, |c| c.acquire(None)).unwrap();
    assert_eq!(r.msg.yiaddr, ip("10.240.0.5"));
}

#[test]
fn a_nak_and_silence_are_errors_that_say_so() {
    let mut wire = scripted(|m: &Message| match m.kind() {
        Some(kind::DISCOVER) => vec![reply(m, kind::OFFER, "10.240.0.5")],
        _ => {
            let mut nak = reply(m, kind::NAK, "0.0.0.0");
            nak.set(opt::MESSAGE, b"wrong network");
            vec![nak]
        }
    });
    let o = options();
    let e = with_client(&mut wire, &o, |c| c.acquire(None)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "server rejected request with Nak (msg: wrong network)"
    );
    let mut wire = scripted(|_: &Message| vec![]);
    let e = with_client(&mut wire, &o, |c| c.acquire(None)).unwrap_err();
    assert_eq!(e.to_string(), "no DHCPOFFER on \"eth0\" within 300ms");
}

#[test]
fn only_offers_of_the_wanted_address_are_taken() {
    let mut wire = scripted(server);
    let o = options();
    let e = with_client(&mut wire, &o, |c| c.acquire(Some(ip("10.240.0.6")))).unwrap_err();
    assert!(e.to_string().starts_with("no DHCPOFFER"), "{e}");
    assert_eq!(
        wire.sent[0].0.ip_opt(opt::REQUESTED_IP),
        Some(ip("10.240.0.6"))
    );
}

#[test]
fn renewal_is_unicast_from_the_address_and_rebinding_broadcast() {
    let mut wire = scripted(server);
    let o = options();
    let to = SERVER;
    with_client(&mut wire, &o, |c| {
        c.renew(ip("10.240.0.5"), to).unwrap();
        c.rebind(ip("10.240.0.5")).unwrap();
    });
    let (renew, src, dst) = &wire.sent[0];
    assert_eq!((*src, *dst), (ip("10.240.0.5"), to));
    assert_eq!(renew.ciaddr, ip("10.240.0.5"));
    // RFC 2131 §4.3.2: no requested address, no server identifier.
    assert_eq!(renew.get(opt::REQUESTED_IP), None);
    assert_eq!(renew.get(opt::SERVER_ID), None);
    let (rebind, src, dst) = &wire.sent[1];
    assert_eq!((*src, *dst), (ip("10.240.0.5"), To::Broadcast));
    assert_eq!(rebind.ciaddr, ip("10.240.0.5"));
    assert_eq!(rebind.get(opt::SERVER_ID), None);
}

#[test]
fn the_release_goes_from_the_leased_address() {
    let mut wire = scripted(server);
    let o = options();
    let to = SERVER;
    with_client(&mut wire, &o, |c| {
        c.release(ip("10.240.0.5"), ip("10.240.0.1"), to)
    })
    .unwrap();
    let (m, src, dst) = &wire.sent[0];
    assert_eq!(m.kind(), Some(kind::RELEASE));
    assert_eq!((*src, *dst), (ip("10.240.0.5"), to));
    assert_eq!(m.ciaddr, ip("10.240.0.5"));
    assert_eq!(m.ip_opt(opt::SERVER_ID), Some(ip("10.240.0.1")));
    assert_eq!(m.get(opt::PARAMETER_LIST), None);
}

#[test]
fn a_release_during_a_wait_ends_it() {
    let mut wire = scripted(|_: &Message| vec![]);
    let o = options();
    let calls = Cell::new(0);
    let stopped = || {
        calls.set(calls.get() + 1);
        calls.get() > 2
    };
    let long = Params {
        timeout: Duration::from_secs(600),
        ..params()
    };
    let e = client(&mut wire, &o, long, &stopped)
        .acquire(None)
        .unwrap_err();
    // Ended by the third look, long before the answer's timeout.
    assert_eq!(e.to_string(), released().to_string());
    assert_eq!(calls.get(), 3);
}

#[test]
fn retries_give_up_with_the_last_failure() {
    let mut n = 0;
    let p = Params {
        resend_timeout: Duration::from_millis(100),
        ..params()
    };
    let e = with_retries(&p, &|| false, || -> Result<()> {
        n += 1;
        Err(Error::Dhcp(format!("failure {n}")))
    })
    .unwrap_err();
    // The first pause (2 s ± 1 s) is already past the budget.
    assert_eq!(n, 1);
    assert_eq!(
        e.to_string(),
        "no more tries: failure 1 (gave up after 1 attempt in 0s)"
    );
    let mut n = 0;
    let ok = with_retries(&params(), &|| false, || {
        n += 1;
        Ok(n)
    });
    assert_eq!(ok.unwrap(), 1);
}

#[test]
fn jitter_stays_within_a_second() {
    for _ in 0..200 {
        let j = jitter(Duration::from_secs(4));
        assert!(
            j >= Duration::from_secs(3) && j <= Duration::from_secs(5),
            "{j:?}"
        );
    }
}
