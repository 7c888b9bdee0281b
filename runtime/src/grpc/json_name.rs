//! protoc's JSON name of a field, which descriptors carry for every field.

/// protoc's JSON name of a field: `user_id` -> `userId`.
pub(crate) fn json_name(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut capitalise = false;
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
