// Every independent mistake is reported in one build.
#[wirecall::service]
pub trait Messy {
    fn not_async(&self);
    async fn by_ref(&self, name: &str);
    async fn narrow(&mut self, value: usize);
}

fn main() {}
