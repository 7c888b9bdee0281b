// A method's arguments travel as one message of at most 16 fields: a 17th is refused on the
// argument, naming the fix; 16 compile.
#[wirecall::service]
pub trait Wide {
    #[allow(clippy::too_many_arguments)]
    async fn sixteen(
        &self,
        a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, g: u8, h: u8,
        i: u8, j: u8, k: u8, l: u8, m: u8, n: u8, o: u8, p: u8,
    ) -> u32;
    async fn seventeen(
        &self,
        a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, g: u8, h: u8,
        i: u8, j: u8, k: u8, l: u8, m: u8, n: u8, o: u8, p: u8,
        q: u8,
    ) -> u32;
}

fn main() {}
