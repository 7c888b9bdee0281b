#[wirecall::service]
pub trait Search {
    async fn find(&self, query: String) -> Result<Vec<String>, String>;
}

fn main() {}
