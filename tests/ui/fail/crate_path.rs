// `crate = "..."` takes a path to wirecall in a string.
#[wirecall::service(crate = 5)]
pub trait NotAString {
    async fn get(&self) -> u32;
}

#[wirecall::service(crate = "wire call")]
pub trait NotAPath {
    async fn get(&self) -> u32;
}

#[wirecall::service(crate = "rpc<u8>")]
pub trait GenericPath {
    async fn get(&self) -> u32;
}

#[wirecall::message(crate = wirecall)]
pub struct Unquoted {
    pub id: u64,
}

#[wirecall::message(crate = "")]
pub struct Empty {
    pub id: u64,
}

#[wirecall::message(name = "x")]
pub struct UnknownArgument {
    pub id: u64,
}

fn main() {}
