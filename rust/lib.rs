//! The core of `toolfilter_fast`: segment-glob matching and the loose fold.
//!
//! Everything here works on plain bytes and knows nothing of Python. Strings
//! arrive as *generalized UTF-8*: ordinary UTF-8 that may also carry lone
//! surrogates, encoded the way Python's `surrogatepass` handler writes them
//! (three bytes, `ED A0..BF xx`). That encoding is injective on Python strings,
//! so equality and substring search on the bytes are exactly equality and
//! substring search on the code points, and nothing is ever replaced lossily.
//! The one binding module, `python`, converts Python objects at the edge.

pub mod arrow;
pub mod arrow_import;
pub mod background;
pub mod expr;
pub mod filter;
pub mod focus;
pub mod fold;
pub mod glob;
pub mod groups;
pub mod hints;
pub mod index;
pub mod literals;
pub mod memo;
pub mod name_patterns;
pub mod pairs;
pub mod re2;
pub mod recycle;
pub mod relevance;
pub mod rules;
pub mod shortcut;
pub mod sweep;
pub mod trie;
pub mod wtf8;

#[cfg(test)]
mod test_rng;

#[cfg(feature = "python")]
mod python;
