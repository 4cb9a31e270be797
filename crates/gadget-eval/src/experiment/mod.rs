//! `gadget bench`'s experiments: the experiment file ([`file`]), the cells of its cross
//! product, the order its runs go in, and what the repetitions of each cell say together.

pub mod check;
pub mod compare;
pub mod file;
pub mod inputs;
pub mod plan;
mod random;
pub mod stats;
pub mod summary;
pub mod verdict;
