// Every serde attribute of a message is reported in one build, on the type, its variants
// and their fields, and the enum stays defined, so its use below adds no error.
#[wirecall::message]
#[serde(rename_all = "snake_case")]
pub enum Command {
    #[serde(rename = "go")]
    Start {
        #[serde(rename = "when", default)]
        at: u64,
    },
    Stop,
}

pub fn stop() -> Command {
    Command::Stop
}

fn main() {}
