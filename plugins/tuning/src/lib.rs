//! `tuning` (work in progress).
pub mod regexp;
