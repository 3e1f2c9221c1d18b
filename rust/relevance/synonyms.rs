//! A small lexicon of English words that name the same action or thing,
//! for the query: a user asks to "save" a page and the tool says "write";
//! asks for "tomorrow" and the tool tells the "date".
//!
//! Each line of [`SYNONYMS`] is one group of words, written from general
//! knowledge of what tools do (files, the web, dates, media, maps, mail,
//! travel, finance, documents and office formats, code and packages, browser
//! automation, food, health...), not from any benchmark's questions, and
//! without names of services or companies (a tool's own name says those;
//! `excel` and `powerpoint` stay, as everyday words for their files). A word
//! may be in more than one group: its synonyms are the other words of all of
//! them (`pdf` stands for `document`, `document` for `pdf` and `file`, `pdf`
//! not for `file`). The words are reduced to terms as a query is, so a group
//! matches every inflection its stems cover. The reference keeps the same
//! lines (`reference/relevance.py`).

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
    "email mail inbox",
    "message chat conversation",
    "weather forecast temperature rain precipitation climate",
    "news headline story",
    "map location place address geographic",
    "movie film cinema",
    "music song audio sound tune melody",
    "video clip",
    "document doc file",
    "folder directory",
    "translate translation translator",
    "calculate compute calculation calculator math arithmetic",
    "chart graph plot diagram visualization visualize",
    "buy purchase shop shopping",
    "run execute",
    "open launch",
    "trip travel",
    "flight airline airport plane",
    "hotel accommodation lodging hostel motel inn",
    "popular trending hot viral",
    "paper article publication preprint",
    "stock share equity ticker securities",
    "crypto cryptocurrency coin blockchain",
    "price cost pricing",
    "currency money forex exchange",
    "invest investment investor",
    "company corporation business enterprise firm",
    "earnings revenue income profit",
    "repository repo",
    "code source script program",
    "package library dependency module",
    "version release changelog",
    "document doc docx pdf",
    "spreadsheet excel xlsx csv sheet workbook",
    "presentation slide slides ppt pptx powerpoint deck slideshow",
    "markdown md",
    "text txt",
    "browser headless",
    "click tap press",
    "navigate visit goto",
    "screenshot capture snapshot screen",
    "database db sql",
    "note memo notebook",
    "task todo",
    "plan schedule itinerary agenda",
    "event appointment meeting",
    "route direction navigation commute",
    "nearby around vicinity proximity",
    "restaurant dining cafe eatery",
    "recipe cook cooking meal dish cuisine food",
    "train rail railway",
    "booking reservation reserve",
    "car vehicle automobile",
    "school education university college",
    "rank ranking leaderboard",
    "book novel ebook literature",
    "art artwork museum gallery sculpture",
    "draw drawing paint sketch canvas illustration",
    "wiki encyclopedia",
    "research study academic scholarly scientific",
    "medical medicine health clinical biomedical",
    "gene genetic genome dna",
    "game gaming",
    "coordinate latitude longitude geocode gps",
    "city town",
    "country nation",
    "domain dns whois hostname",
    "app application software",
    "stop terminate kill cancel",
    "start begin",
    "move rename",
    "copy duplicate clone",
    "compare comparison diff difference",
    "merge combine join",
    "split divide",
    "extract parse scrape crawl",
    "component widget",
    "guide tutorial manual readme",
    "user account profile",
    "comment reply",
    "review rating",
    "recommend recommendation suggest suggestion",
    "analyze analysis analyse assess",
    "history historical",
    "think thought reasoning",
    "problem exercise puzzle challenge",
    "contest competition tournament match",
    "statistic stats metric analytics",
    "security vulnerability cve",
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
        // Office formats and finance.
        assert!(lexicon.of(b"spreadsheet").iter().any(|t| &**t == b"excel"));
        assert!(lexicon.of(b"ticker").iter().any(|t| &**t == b"stock"));
    }

    #[test]
    fn a_word_of_two_groups_has_both_groups_synonyms() {
        let lexicon = Lexicon::new(&Terms::default());
        let has = |term: &[u8], other: &[u8]| lexicon.of(term).iter().any(|t| &**t == other);
        assert!(has(b"document", b"file") && has(b"document", b"pdf"));
        assert!(has(b"pdf", b"document") && !has(b"pdf", b"file"));
        assert!(!has(b"file", b"pdf"));
    }
}
