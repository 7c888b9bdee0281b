// Types with no wire form are refused on the type itself, with what to write instead.
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

#[wirecall::service]
pub trait Odd {
    async fn size(&self, len: usize);
    async fn huge(&self) -> i128;
    async fn keyed(&self, by_score: HashMap<f64, String>);
    async fn queue(&self, items: VecDeque<u32>);
    async fn shared(&self, name: Rc<String>);
    async fn wide(&self, row: (u8, u8, u8, u8, u8, u8, u8, u8, u8));
}

fn main() {}
