// An enum's form in each codec is fixed: internal, adjacent and no tagging are refused.
#[wirecall::message]
#[serde(tag = "type")]
pub enum Internal {
    Circle { radius: f64 },
}

#[wirecall::message]
#[serde(tag = "t", content = "c")]
pub enum Adjacent {
    Circle(f64),
}

#[wirecall::message]
#[serde(untagged)]
pub enum Untagged {
    Circle(f64),
}

fn main() {}
