// `name = "..."` sets the wire name, and method ids follow it.

use wirecall::Service;

#[wirecall::service(name = "pkg.Accounts")]
pub(crate) trait Accounts {
    async fn balance(&self, account: String) -> i64;
}

struct Bank;

impl Accounts for Bank {
    async fn balance(&self, _account: String) -> i64 {
        0
    }
}

fn main() {
    assert_eq!(AccountsClient::SERVICE_NAME, "pkg.Accounts");
    let server = AccountsServer::new(Bank);
    let descriptor = server.descriptor();
    assert_eq!(descriptor.name, "pkg.Accounts");
    assert_eq!(
        descriptor.methods[0].id,
        wirecall::method_id("pkg.Accounts", "balance")
    );
}
