//! A small lexicon of English words that name the same action or thing,
//! for the query: a user asks to "save" a page and the tool says "write";
//! asks for a "photo" and the tool makes a "picture".
//!
//! Each line of [`SYNONYMS`] is one group of words about what tools do
//! (files, the web, dates, media, maps, travel, finance, documents...), and
//! in each group every two words are related in WordNet, the general-purpose
//! English lexical database: they share a synset, or a synset of one is a
//! direct hypernym or hyponym of a synset of the other, or WordNet links them
//! as derived forms, similar adjectives, a pertainym or an attribute
//! (`tests/test_relevance_lexicon.py` checks every pair against the WordNet
//! database when it is installed). A word that WordNet does not relate to
//! the others is not in the group, and a group that WordNet breaks apart is
//! written as its parts (`find locate`, `find discover`). Each line of
//! [`FORMATS`] is a file extension and the words of its registered media
//! type (the test checks them against Python's `mimetypes`). No word names a
//! service or a company.
//!
//! A word may be in more than one group: its synonyms are the other words of
//! all of them (`picture` stands for `image` and `photo`, `image` not for
//! `photo`). The words are reduced to terms as a query is, so a group
//! matches every inflection its stems cover. The reference keeps the same
//! lines (`reference/relevance.py`).

use rustc_hash::FxHashMap;

use super::tokens::Terms;

/// The groups of words that stand for one another, one group a line: in
/// each group, every two words are related in WordNet (see the module).
pub const SYNONYMS: &[&str] = &[
    "save write record", "find locate", "find discover", "search lookup", "search seek", "get fetch retrieve",
    "get obtain", "retrieve access", "remove delete", "remove clear", "delete erase", "show display",
    "create make generate", "create make build", "make add", "edit modify change alter", "modify update",
    "date day", "date month", "time day", "today day", "tomorrow day", "yesterday day", "picture image",
    "picture photo photograph pic", "site website", "convert conversion", "summary summarize summarise abstract",
    "summary overview", "chat conversation", "weather precipitation", "rain precipitation", "news story",
    "place address", "movie film", "film cinema", "music sound", "music tune melody", "song sound",
    "audio sound", "calculate compute", "chart graph plot", "graph plot diagram", "buy purchase",
    "run execute", "open launch", "trip travel", "hotel hostel inn", "lodging hostel", "popular hot",
    "paper article", "stock share", "stock securities", "price cost", "currency money", "invest investor",
    "corporation firm", "business enterprise", "business firm", "earnings income profit", "note memo",
    "plan schedule agenda", "appointment meeting", "route direction", "direction navigation", "vicinity proximity",
    "restaurant cafe eatery", "cooking cuisine", "train rail", "rail railway", "booking reservation",
    "car automobile", "school education", "book novel", "art artwork", "art sculpture", "draw drawing sketch",
    "academic scholarly", "medical medicine", "gene genetic", "country nation", "stop terminate",
    "terminate kill", "start begin", "copy duplicate", "copy clone", "compare comparison", "merge combine",
    "split divide", "recommend suggest", "analyze analysis", "analyze analyse", "history historical",
    "think thought", "thought reasoning", "problem puzzle", "contest competition tournament", "contest competition match",
];

/// File formats: an extension, then the words of its registered media type
/// (`docx` is `application/vnd.openxmlformats-officedocument.wordprocessingml.document`).
pub const FORMATS: &[&str] = &[
    "docx document", "xls excel", "xlsx sheet", "ppt powerpoint", "pptx presentation", "md markdown",
    "txt plain", "htm html", "png image", "jpg image", "jpeg image", "gif image", "svg image", "webp image",
    "bmp image", "mp3 audio", "wav audio", "mp4 video", "mov video", "avi video",
];

/// Each term's synonyms (the other terms of its groups), as terms.
#[derive(Default)]
pub(crate) struct Lexicon {
    of: FxHashMap<Box<[u8]>, Vec<Box<[u8]>>>,
}

impl Lexicon {
    pub(crate) fn new(terms: &Terms) -> Self {
        let mut of: FxHashMap<Box<[u8]>, Vec<Box<[u8]>>> = FxHashMap::default();
        for line in SYNONYMS.iter().chain(FORMATS) {
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
        for line in SYNONYMS.iter().chain(FORMATS) {
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
        let has = |term: &[u8], other: &[u8]| lexicon.of(term).iter().any(|t| &**t == other);
        assert!(has(b"save", b"write") && has(b"write", b"save"));
        assert!(has(b"photo", b"pictur") && !has(b"save", b"save"));
        assert!(lexicon.of(b"zebra").is_empty());
        // A file extension stands for its media type's words, and they for it.
        assert!(has(b"pptx", b"present") && has(b"present", b"pptx"));
    }

    #[test]
    fn a_word_of_two_groups_has_both_groups_synonyms() {
        let lexicon = Lexicon::new(&Terms::default());
        let has = |term: &[u8], other: &[u8]| lexicon.of(term).iter().any(|t| &**t == other);
        assert!(has(b"pictur", b"imag") && has(b"pictur", b"photo"));
        assert!(has(b"photo", b"pictur") && !has(b"photo", b"imag"));
        assert!(has(b"imag", b"png") && !has(b"png", b"jpg"));
    }

    #[test]
    fn no_group_is_one_term() {
        let terms = Terms::default();
        for line in SYNONYMS.iter().chain(FORMATS) {
            let mut group: Vec<Vec<u8>> = Vec::new();
            terms.each_term(line.as_bytes(), false, |term| group.push(term.to_vec()));
            group.sort_unstable();
            group.dedup();
            assert!(group.len() >= 2, "{line:?}");
        }
    }
}
