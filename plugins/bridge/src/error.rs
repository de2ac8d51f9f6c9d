//! The plugin's error is skel's CNI error (code, message, and the details
//! of a delegated plugin's error); `cni-net` failures convert into it as
//! code 999, like every plain error of the reference.

pub use skel::Error;

/// Several independent failures (DEL, GC) reported together: the first
/// error's code, all messages joined with `; `.
pub fn join(errors: Vec<Error>) -> Result<(), Error> {
    let mut iter = errors.into_iter();
    let Some(first) = iter.next() else {
        return Ok(());
    };
    let mut out = first;
    for e in iter {
        out.msg.push_str("; ");
        out.msg.push_str(&e.msg);
    }
    Err(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_keeps_every_message() {
        assert_eq!(join(vec![]), Ok(()));
        let e = join(vec![Error::internal("a"), Error::config("b")]).unwrap_err();
        assert_eq!(e, Error::internal("a; b"));
    }
}
