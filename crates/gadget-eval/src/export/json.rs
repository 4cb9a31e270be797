//! JSON: any serializable document, pretty-printed, one trailing newline.

use std::io::{self, Write};

use serde::Serialize;

use super::Exporter;

/// Pretty-printed JSON.
pub struct Json;

impl<D: Serialize + ?Sized> Exporter<D> for Json {
    fn export(&self, doc: &D, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, doc)?;
        writeln!(out)
    }
}
