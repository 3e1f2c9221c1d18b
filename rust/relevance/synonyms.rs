//! A small lexicon of English words that name the same action or thing,
//! for the query: a user asks to "save" a page and the tool says "write";
//! asks for "tomorrow" and the tool tells the "date".
//!
//! Each line of [`SYNONYMS`] is one group of words, written from general
//! knowledge of what tools do (files, the web, dates, media, maps, mail,
//! travel...), not from any benchmark's questions. The words are reduced to
//! terms as a query is, so a group matches every inflection its stems cover.
//! The reference keeps the same lines (`reference/relevance.py`).

use rustc_hash::FxHashMap;

use super::tokens::Terms;

/// The groups of words that stand for one another, one group a line.
pub const SYNONYMS: &[&str] = &[
    "save store write export persist record",
    "find search lookup query seek locate discover",
    "get fetch retrieve read obtain download load access",
    "remove delete erase clear",
    "show list display view browse",
    "create make generate new add build",
    "edit modify update change alter",
    "date time today tomorrow yesterday weekday calendar day week month year",
    "picture image photo photograph pic",
    "web webpage page url site website browser link online internet",
    "convert transform conversion",
    "summary summarize summarise abstract overview",
    "email mail",
    "message chat",
    "weather forecast",
    "news headline",
    "map location place address geographic",
    "movie film cinema",
    "music song audio",
    "video clip",
    "document doc file",
    "folder directory",
    "translate translation",
    "calculate compute calculation",
    "chart graph plot diagram",
    "buy purchase shop shopping",
    "run execute",
    "open launch",
    "trip travel",
    "flight airline",
    "hotel accommodation lodging",
    "popular trending hot",
    "paper article publication",
];

/// Each term's synonyms (the other terms of its groups), as terms.
#[derive(Default)]
pub(crate) struct Lexicon {
    of: FxHashMap<Box<[u8]>, Vec<Box<[u8]>>>,
}

impl Lexicon {
    pub(crate) fn new(terms: &Terms) -> Self {
        let mut of: FxHashMap<Box<[u8]>, Vec<Box<[u8]>>> = FxHashMap::default();
        for line in SYNONYMS {
            let mut group: Vec<Box<[u8]>> = Vec::new();
            terms.each_term(line.as_bytes(), false, |term| {
                if !group.iter().any(|t| &**t == term) {
                    group.push(term.into());
                }
            });
            for term in &group {
                let others = of.entry(term.clone()).or_default();
                for other in &group {
                    if other != term && !others.contains(other) {
                        others.push(other.clone());
                    }
                }
            }
        }
        Lexicon { of }
    }

    /// The synonyms of `term` (none for most terms).
    pub(crate) fn of(&self, term: &[u8]) -> &[Box<[u8]>] {
        self.of.get(term).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_one_term() {
        let terms = Terms::default();
        for line in SYNONYMS {
            for word in line.split(' ') {
                let mut count = 0;
                terms.each_term(word.as_bytes(), false, |_| count += 1);
                assert_eq!(count, 1, "{word:?} in {line:?}");
            }
        }
    }

    #[test]
    fn synonyms_are_stems_both_ways() {
        let lexicon = Lexicon::new(&Terms::default());
        assert!(lexicon.of(b"save").iter().any(|t| &**t == b"write"));
        assert!(lexicon.of(b"write").iter().any(|t| &**t == b"save"));
        assert!(lexicon.of(b"tomorrow").iter().any(|t| &**t == b"date"));
        assert!(!lexicon.of(b"save").iter().any(|t| &**t == b"save"));
        assert!(lexicon.of(b"zebra").is_empty());
    }
}
