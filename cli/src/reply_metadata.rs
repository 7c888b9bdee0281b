//! What a server sent beside its answer, printed on stderr so that stdout keeps only the
//! answer: a reply's metadata (a unary call's, or a stream's before its items) as lines
//! `metadata KEY: VALUE`, and a stream's trailers after its end as lines `trailer KEY: VALUE`.

use wirecall::Metadata;

/// Prints a reply's (or a stream's) metadata, one line per entry; nothing when it is empty.
pub fn print_metadata(metadata: &Metadata) {
    print_entries("metadata", metadata);
}

/// Prints a stream's trailers, one line per entry; nothing when there are none.
pub fn print_trailers(trailers: Option<&Metadata>) {
    if let Some(trailers) = trailers {
        print_entries("trailer", trailers);
    }
}

fn print_entries(label: &str, metadata: &Metadata) {
    for (key, value) in metadata.iter() {
        eprintln!("{label} {key}: {value}");
    }
}
