// `#[cfg]` on a method removes it from the client, the server and the descriptor;
// `#[deprecated]` methods compile without warnings; `Send + Sync + 'static` may be written.
#![deny(warnings)]

#[wirecall::service]
pub trait Legacy: Send + Sync + 'static {
    #[deprecated(note = "use `current`")]
    async fn old(&self) -> u32;
    async fn current(&self) -> u32;
    #[cfg(any())]
    async fn compiled_out(&self, value: NotDefinedAnywhere) -> u32;
}

struct Impl;

#[allow(deprecated)]
impl Legacy for Impl {
    async fn old(&self) -> u32 {
        1
    }
    async fn current(&self) -> u32 {
        2
    }
}

fn main() {
    use wirecall::Service as _;
    let server = LegacyServer::new(Impl);
    let names: Vec<&str> = server.descriptor().methods.iter().map(|m| m.name).collect();
    assert_eq!(names, ["old", "current"]);
}
