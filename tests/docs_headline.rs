//! The README's headline figures come from `bench/RESULTS.md`: the newest run there that
//! measured wirecall beside tarpc and tonic in the `W1-1obj` and `W2-1x256` cells. This test
//! builds the headline sentence from that table and fails, printing the sentence to paste,
//! when the README says anything else; a new full run in RESULTS.md thus updates the README.

use std::path::Path;

fn read(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("reading {}: {err}", file.display()))
}

/// One run's section of RESULTS.md: its date and its results table.
struct Run<'a> {
    date: &'a str,
    header: Vec<&'a str>,
    rows: Vec<Vec<&'a str>>,
}

impl Run<'_> {
    /// The cell of `workload`'s `metric` row in the column named `column`.
    fn cell(&self, workload: &str, metric: &str, column: &str) -> &str {
        let index = self
            .header
            .iter()
            .position(|name| *name == column)
            .unwrap_or_else(|| panic!("the run of {} has no column {column:?}", self.date));
        let row = self
            .rows
            .iter()
            .find(|row| row.first() == Some(&workload) && row.get(1) == Some(&metric))
            .unwrap_or_else(|| panic!("the run of {} has no row {workload} {metric}", self.date));
        row[index]
    }
}

/// The `| a | b |` cells of a table line.
fn cells(line: &str) -> Vec<&str> {
    line.trim()
        .trim_start_matches('|')
        .trim_end_matches('|')
        .split('|')
        .map(str::trim)
        .collect()
}

/// The runs of RESULTS.md, newest first (the file keeps them in that order), each with the
/// first table of its section.
fn runs(results: &str) -> Vec<Run<'_>> {
    let mut runs = Vec::new();
    for section in results.split("\n## Run of ").skip(1) {
        let date = section.split([':', '\n']).next().unwrap_or_default().trim();
        let mut table = section
            .lines()
            .skip_while(|line| !line.starts_with('|'))
            .take_while(|line| line.starts_with('|'));
        let Some(header) = table.next() else { continue };
        let rows = table.skip(1).map(cells).collect();
        runs.push(Run {
            date,
            header: cells(header),
            rows,
        });
    }
    runs
}

/// A figure of the bench's tables (`93.0`, `738.6k`, `1.86M`) as a number.
fn figure(text: &str) -> f64 {
    let (digits, scale) = match text.as_bytes().last() {
        Some(b'k') => (&text[..text.len() - 1], 1e3),
        Some(b'M') => (&text[..text.len() - 1], 1e6),
        _ => (text, 1.0),
    };
    digits
        .parse::<f64>()
        .unwrap_or_else(|err| panic!("{text:?} is not a figure: {err}"))
        * scale
}

/// A whole number with thousands separators: 738600 -> `738,600`.
fn grouped(value: f64) -> String {
    let digits = format!("{:.0}", value.round());
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The columns the headline quotes: wirecall with MessagePack, and its two peers.
const COLUMNS: [&str; 3] = ["wirecall msgpack", "tarpc bincode", "tonic protobuf"];

/// The README's headline sentence, from the newest full run.
fn headline(results: &str) -> String {
    let runs = runs(results);
    let run = runs
        .iter()
        .find(|run| {
            COLUMNS.iter().all(|column| run.header.contains(column))
                && run.rows.iter().any(|row| row.first() == Some(&"W2-1x256"))
        })
        .expect("RESULTS.md holds a run with the W1 and W2 cells");
    let p50 = |column| format!("{:.0}", figure(run.cell("W1-1obj", "p50 us", column)));
    let rate = |column| grouped(figure(run.cell("W2-1x256", "calls/s", column)));
    format!(
        "On a 2-core machine (bench/RESULTS.md, run of {date}) a sequential call with one small \
         object takes {ours} us at the median (tarpc {tarpc} us, tonic {tonic} us), and one \
         connection carries {ours_rate} pipelined calls per second (tarpc {tarpc_rate}, tonic \
         {tonic_rate}):",
        date = run.date,
        ours = p50(COLUMNS[0]),
        tarpc = p50(COLUMNS[1]),
        tonic = p50(COLUMNS[2]),
        ours_rate = rate(COLUMNS[0]),
        tarpc_rate = rate(COLUMNS[1]),
        tonic_rate = rate(COLUMNS[2]),
    )
}

/// Text with every run of whitespace (line breaks included) made one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_readme_headline_is_the_newest_full_run_of_the_bench() {
    let sentence = headline(&read("bench/RESULTS.md"));
    assert!(
        one_line(&read("README.md")).contains(&sentence),
        "README.md's headline figures differ from bench/RESULTS.md; put this sentence in the \
         README's first paragraph:\n\n{sentence}\n"
    );
}

#[test]
fn the_headline_is_built_from_the_first_run_with_the_cells() {
    let results = "# Results\n\n\
        ## Run of 2027-01-02: one cell\n\n\
        | cell | metric | wirecall msgpack |\n|---|---|---:|\n| S1 | items/s | 1.0M |\n\n\
        ## Run of 2027-01-01: every cell\n\ntext\n\n\
        | cell | metric | wirecall msgpack | tarpc bincode | tonic protobuf |\n\
        |---|---|---:|---:|---:|\n\
        | W1-1obj | p50 us | 93.0 | 102 | 200 |\n\
        | W2-1x256 | calls/s | 738.6k | 1.2M | 40200 |\n\n\
        ## Run of 2026-12-31: older\n\n\
        | cell | metric | wirecall msgpack | tarpc bincode | tonic protobuf |\n\
        |---|---|---:|---:|---:|\n\
        | W1-1obj | p50 us | 1 | 2 | 3 |\n\
        | W2-1x256 | calls/s | 4 | 5 | 6 |\n";
    assert_eq!(
        headline(results),
        "On a 2-core machine (bench/RESULTS.md, run of 2027-01-01) a sequential call with one \
         small object takes 93 us at the median (tarpc 102 us, tonic 200 us), and one \
         connection carries 738,600 pipelined calls per second (tarpc 1,200,000, tonic 40,200):"
    );
}
