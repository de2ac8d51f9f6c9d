//! stub
pub fn main(_args: &[String]) -> i32 {
    1
}
