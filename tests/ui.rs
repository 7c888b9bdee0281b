//! Compile-time tests of `#[wirecall::service]` and `#[wirecall::message]`: every diagnostic
//! has a case in `ui/fail` (with the expected compiler output next to it), and `ui/pass` holds
//! code that must compile and run.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
