// #[wirecall::message] reads its own attributes and refuses keys it does not know, instead
// of leaving them to the compiler or ignoring them.
#[wirecall::message]
#[wirecall(skip_debg)]
pub struct Typo {
    pub id: u64,
}

#[wirecall::message]
#[wirecall(other)]
pub enum OnTheType {
    Known,
}

#[wirecall::message]
pub struct Numbered {
    #[wirecall(tag = 3)]
    pub id: u64,
}

#[wirecall::message]
pub enum Variants {
    #[wirecall(skip_debug)]
    First,
    Second {
        #[wirecall(other)]
        inner: u32,
    },
}

#[wirecall::message]
#[prost(message)]
pub struct Prost {
    pub id: u64,
}

fn main() {}
