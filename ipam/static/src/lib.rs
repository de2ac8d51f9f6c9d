//! static (wip)
