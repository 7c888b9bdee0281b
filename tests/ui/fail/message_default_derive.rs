#[wirecall::message]
#[derive(Clone, Default, PartialEq)]
pub struct Settings {
    pub verbose: bool,
}

fn main() {}
