// The rules of #[wirecall::message] enums: a protobuf enum needs a variant numbered 0, the
// catch-all goes last and carries no data, variants with data are numbered by position.
#[wirecall::message]
pub enum Level {
    Low = 1,
    High = 2,
}

#[wirecall::message]
pub enum Event {
    #[wirecall(other)]
    Unknown,
    Started(u64),
}

#[wirecall::message]
pub enum Reply {
    Done(u32) = 4,
}

#[wirecall::message]
pub enum Never {}

fn main() {}
