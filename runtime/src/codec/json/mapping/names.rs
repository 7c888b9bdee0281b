//! The three names, and the float each one stands for.

const NAN: &str = "NaN";
const INFINITY: &str = "Infinity";
const NEG_INFINITY: &str = "-Infinity";

pub(super) fn non_finite_name(value: f64) -> &'static str {
    if value.is_nan() {
        NAN
    } else if value > 0.0 {
        INFINITY
    } else {
        NEG_INFINITY
    }
}

pub(super) fn non_finite_value(name: &str) -> Option<f64> {
    match name {
        NAN => Some(f64::NAN),
        INFINITY => Some(f64::INFINITY),
        NEG_INFINITY => Some(f64::NEG_INFINITY),
        _ => None,
    }
}
