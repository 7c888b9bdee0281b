// `codecs(...)` lists known codecs.
#[wirecall::service(codecs(xml))]
pub trait Feed {
    async fn latest(&self) -> String;
}

fn main() {}
