#[wirecall::service]
pub trait Printer {
    async fn print(&self, text: impl Into<String>);
}

fn main() {}
