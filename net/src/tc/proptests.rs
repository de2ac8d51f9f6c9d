//! Property tests: generated qdiscs and filters survive our encoder and
//! parser unchanged, no byte string makes the parsers panic, and the
//! reference's tbf math never panics whatever the numbers.

use proptest::prelude::*;

use super::filter::{ACT_STOLEN, EGRESS_REDIRECT, Filter, Mirred, U32Redirect};
use super::{Qdisc, QdiscSpec, Tbf, new_qdisc};
use crate::link::Link;
use crate::netlink::Msg;

fn tbf() -> impl Strategy<Value = Tbf> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        any::<Option<u32>>(),
    )
        .prop_map(|(rate, limit, buffer, burst)| Tbf {
            rate,
            limit,
            buffer,
            burst,
        })
}

proptest! {
    #[test]
    fn tbf_options_round_trip(t in tbf(), index in 1u32.., parent in any::<u32>(), h in any::<u32>()) {
        let m = new_qdisc(0, &Link::named(index, "d"), parent, h, &QdiscSpec::Tbf(t));
        let q = Qdisc::from_body(m.body()).unwrap();
        prop_assert_eq!((q.ifindex, q.parent, q.handle), (index, parent, h));
        prop_assert!(q.tbf.unwrap().same_shape(&t));
        prop_assert!(q.is(&QdiscSpec::Tbf(t)));
    }

    #[test]
    fn redirect_filters_round_trip(
        index in 1u32.., parent in any::<u32>(), prio in any::<u16>(),
        protocol in any::<u16>(), classid in any::<u32>(), to in any::<u32>(),
    ) {
        let spec = U32Redirect { parent, prio, protocol, classid, to };
        let m = super::filter::u32_redirect_message(&Link::named(index, "d"), &spec);
        let f = Filter::from_body(m.body()).unwrap();
        prop_assert_eq!((f.ifindex, f.parent, f.prio, f.protocol), (index, parent, prio, protocol));
        prop_assert_eq!(f.classid, Some(classid));
        prop_assert!(f.redirects_all_to(to));
        let want = Mirred { eaction: EGRESS_REDIRECT, ifindex: to, verdict: ACT_STOLEN };
        prop_assert_eq!(f.actions[0].mirred, Some(want));
    }

    #[test]
    fn parsers_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = Qdisc::from_body(&body);
        let _ = Filter::from_body(&body);
        let _ = Tbf::parse(&body);
        // The same bytes as the options of a tbf and of a u32 filter.
        for kind in ["tbf", "u32"] {
            let mut m = Msg::new(36, 0, &[0; 20]);
            m.str(super::TCA_KIND, kind).attr(super::TCA_OPTIONS, &body);
            let _ = Qdisc::from_body(m.body());
            let _ = Filter::from_body(m.body());
        }
    }

    #[test]
    fn reference_math_never_panics(rate in any::<u64>(), burst in any::<u64>(), tick in 0.0f64..1e6) {
        let t = Tbf::reference(rate, burst, tick);
        prop_assert_eq!(t.rate, rate / 8);
        prop_assert_eq!(t.burst, None);
    }
}
