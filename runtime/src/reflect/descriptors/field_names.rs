//! The names protoc derives from a field's name, which descriptors carry: its JSON name and,
//! for a map, its entry message's name.

/// protoc's JSON name of a field: `user_id` -> `userId`.
pub(crate) fn json_name(field: &str) -> String {
    camel_case(field, false)
}

/// protoc's name for the entry message of a map field: `labels` -> `LabelsEntry`,
/// `x_y` -> `XYEntry`.
pub(crate) fn map_entry_name(field: &str) -> String {
    camel_case(field, true) + "Entry"
}

/// `field` without its underscores, each letter after one in upper case (and the first one,
/// with `first_upper`).
fn camel_case(field: &str, first_upper: bool) -> String {
    let mut out = String::with_capacity(field.len() + 5);
    let mut capitalise = first_upper;
    for c in field.chars() {
        if c == '_' {
            capitalise = true;
        } else if capitalise {
            out.push(c.to_ascii_uppercase());
            capitalise = false;
        } else {
            out.push(c);
        }
    }
    out
}
