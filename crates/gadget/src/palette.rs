//! The colours of every plot Gadget draws (experiment reports, analysis reports, PNG and SVG
//! plots): Okabe and Ito's palette, told apart by colour-blind readers, by series index and
//! then repeated. Series `i` has the same colour in every plot of a report.

/// The palette as `(red, green, blue)`, in the order series take them.
pub const RGB: [(u8, u8, u8); 8] = [
    (0x00, 0x72, 0xB2), // blue
    (0xE6, 0x9F, 0x00), // orange
    (0x00, 0x9E, 0x73), // bluish green
    (0xD5, 0x5E, 0x00), // vermillion
    (0xCC, 0x79, 0xA7), // reddish purple
    (0x56, 0xB4, 0xE9), // sky blue
    (0xF0, 0xE4, 0x42), // yellow
    (0x00, 0x00, 0x00), // black
];

/// The palette as CSS colours, matching [`RGB`].
pub const HEX: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

/// The colour of series `i` as `(red, green, blue)`.
pub fn rgb(i: usize) -> (u8, u8, u8) {
    RGB[i % RGB.len()]
}

/// The colour of series `i` as a CSS colour.
pub fn hex(i: usize) -> &'static str {
    HEX[i % HEX.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_spellings_are_the_same_colours() {
        for (i, (r, g, b)) in RGB.iter().enumerate() {
            assert_eq!(hex(i), format!("#{r:02X}{g:02X}{b:02X}"));
        }
        assert_eq!(rgb(8), rgb(0), "repeated after the eighth series");
    }
}
