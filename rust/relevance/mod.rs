//! A ranked search over tools: which of thousands of tools best fit a turn's
//! message, built once per catalog and asked once per turn.
//!
//! Each tool is five fields ([`FIELDS`]); each field is cut into terms
//! (`tokens`) and scored with BM25F: a term's weighted, length-normalised
//! frequencies over the fields are summed before the saturation, so a term
//! found in the name and the description counts once, more strongly.
//!
//! **Server evidence.** A task often needs several tools of one server (a
//! document server's create, add and convert tools), and a server's tools
//! together say more about what it is for than any one of them. So each
//! server is scored too, as one document made of all its tools, and a tool's
//! score is `own / best own + server_evidence * server / best server`, the
//! bests taken over the tools being ranked.
//!
//! Everything that does not depend on the query (each term's contribution to
//! each tool) is computed when the index is built, so a query only adds up
//! the postings of its terms. Floats are added in one fixed order (query terms
//! in order of first appearance, fields in [`FIELDS`] order), which the
//! reference follows, so both give the same scores to the last bit; equal
//! scores rank in input order.

mod tokens;

use rustc_hash::FxHashMap;

pub use tokens::{terms, STEM_MAX, STOPWORDS};
use tokens::Terms;

/// The fields of a tool, in the order they are scored.
pub const FIELDS: [&str; 5] = ["name", "title", "description", "server", "params"];
const SERVER: usize = 3;
/// The fields whose words are also cut at camelCase: identifiers.
const CAMEL: [bool; 5] = [true, false, false, true, true];

/// How text is weighed. Every number is finite; `k1 > 0`, `0 <= b <= 1`,
/// weights and `server_evidence` `>= 0` (the binding checks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ranking {
    pub weights: [f64; 5],
    pub k1: f64,
    pub b: f64,
    pub server_evidence: f64,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking { weights: [2.0, 1.0, 1.0, 1.0, 0.0], k1: 0.8, b: 0.75, server_evidence: 1.0 }
    }
}

/// One tool's text: each field generalized UTF-8, or None.
pub type ToolText<'a> = [Option<&'a [u8]>; 5];

/// Per term, the documents holding it and what it adds to each.
#[derive(Default)]
struct Postings {
    lists: Vec<Vec<(u32, f64)>>,
}

/// Term counts of one document, field by field.
type Counts = FxHashMap<u32, [u32; 5]>;

impl Postings {
    /// BM25F over documents given as term counts and field lengths.
    fn build(docs: &[Counts], lengths: &[[u32; 5]], vocabulary: usize, ranking: &Ranking) -> Self {
        let total = docs.len();
        let mut averages = [0.0f64; 5];
        for (f, average) in averages.iter_mut().enumerate() {
            let sum: u64 = lengths.iter().map(|l| u64::from(l[f])).sum();
            *average = if total > 0 { sum as f64 / total as f64 } else { 0.0 };
        }
        let mut df = vec![0u32; vocabulary];
        for counts in docs {
            for (&term, tf) in counts {
                if tf.iter().zip(&ranking.weights).any(|(&n, &w)| n > 0 && w > 0.0) {
                    df[term as usize] += 1;
                }
            }
        }
        let idf: Vec<f64> = df.iter().map(|&n| idf(n, total)).collect();
        let mut lists: Vec<Vec<(u32, f64)>> = df.iter().map(|&n| Vec::with_capacity(n as usize)).collect();
        // Documents in order, so each list is sorted by document.
        for (doc, counts) in docs.iter().enumerate() {
            let mut entries: Vec<(&u32, &[u32; 5])> = counts.iter().collect();
            entries.sort_unstable_by_key(|(term, _)| **term);
            for (&term, tf) in entries {
                let mut x = 0.0f64;
                for f in 0..5 {
                    let weight = ranking.weights[f];
                    if weight > 0.0 && tf[f] > 0 {
                        let norm = 1.0 - ranking.b + ranking.b * f64::from(lengths[doc][f]) / averages[f];
                        x += weight * f64::from(tf[f]) / norm;
                    }
                }
                if x > 0.0 {
                    let contribution = idf[term as usize] * x / (ranking.k1 + x);
                    lists[term as usize].push((doc as u32, contribution));
                }
            }
        }
        Postings { lists }
    }

    /// Adds the postings of `terms`, term by term, into `scores`.
    fn add(&self, terms: &[u32], scores: &mut [f64]) {
        for &term in terms {
            for &(doc, contribution) in &self.lists[term as usize] {
                scores[doc as usize] += contribution;
            }
        }
    }
}

fn idf(count: u32, total: usize) -> f64 {
    let (n, total) = (f64::from(count), total as f64);
    (1.0 + (total - n + 0.5) / (n + 0.5)).ln()
}

/// The index: terms, tools and servers.
pub struct SearchIndex {
    terms: Terms,
    vocabulary: FxHashMap<Box<[u8]>, u32>,
    tools: Postings,
    servers: Postings,
    /// Each tool's server, or `NO_SERVER`.
    server_of: Vec<u32>,
    server_count: usize,
    ranking: Ranking,
}

const NO_SERVER: u32 = u32::MAX;

/// Folded pieces already turned into term ids (None: a dropped piece), so a
/// word is stemmed once however often it occurs.
type PieceCache = FxHashMap<Box<[u8]>, Option<u32>>;

impl SearchIndex {
    /// Indexes `tools` (at most `u32::MAX - 1` of them).
    pub fn build(tools: &[ToolText<'_>], ranking: Ranking) -> Self {
        let terms = Terms::default();
        let mut vocabulary: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
        let mut cache = PieceCache::default();
        let mut docs = Vec::with_capacity(tools.len());
        let mut lengths = Vec::with_capacity(tools.len());
        let mut server_ids: FxHashMap<&[u8], u32> = FxHashMap::default();
        let mut server_of = Vec::with_capacity(tools.len());
        let mut server_docs: Vec<Counts> = Vec::new();
        let mut server_lengths: Vec<[u32; 5]> = Vec::new();
        for text in tools {
            let mut counts = Counts::default();
            let mut length = [0u32; 5];
            for f in 0..5 {
                let Some(field) = text[f] else { continue };
                if ranking.weights[f] <= 0.0 {
                    continue;
                }
                each_id(&terms, &mut vocabulary, &mut cache, field, CAMEL[f], |id| {
                    counts.entry(id).or_default()[f] += 1;
                    length[f] += 1;
                });
            }
            let server = match text[SERVER] {
                None => NO_SERVER,
                Some(id) => *server_ids.entry(id).or_insert_with(|| {
                    // A new server: its own field is its id's terms, once.
                    let mut own = Counts::default();
                    let mut own_length = [0u32; 5];
                    for (&term, tf) in &counts {
                        if tf[SERVER] > 0 {
                            own.entry(term).or_default()[SERVER] = tf[SERVER];
                        }
                    }
                    own_length[SERVER] = length[SERVER];
                    server_docs.push(own);
                    server_lengths.push(own_length);
                    (server_docs.len() - 1) as u32
                }),
            };
            if server != NO_SERVER {
                let (merged, merged_length) = (&mut server_docs[server as usize], &mut server_lengths[server as usize]);
                for (&term, tf) in &counts {
                    let slot = merged.entry(term).or_default();
                    for f in (0..5).filter(|&f| f != SERVER) {
                        slot[f] += tf[f];
                    }
                }
                for f in (0..5).filter(|&f| f != SERVER) {
                    merged_length[f] += length[f];
                }
                // Terms only of the server field leave an empty slot behind: harmless.
            }
            server_of.push(server);
            docs.push(counts);
            lengths.push(length);
        }
        let tool_postings = Postings::build(&docs, &lengths, vocabulary.len(), &ranking);
        let server_postings = Postings::build(&server_docs, &server_lengths, vocabulary.len(), &ranking);
        SearchIndex {
            terms,
            vocabulary,
            tools: tool_postings,
            servers: server_postings,
            server_of,
            server_count: server_docs.len(),
            ranking,
        }
    }

    pub fn len(&self) -> usize {
        self.server_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.server_of.is_empty()
    }

    pub fn ranking(&self) -> &Ranking {
        &self.ranking
    }

    /// The query's distinct terms that the index holds, in order of first
    /// appearance; and whether the query had any term at all.
    fn query_ids(&self, query: &[u8]) -> (Vec<u32>, bool) {
        let mut ids = Vec::new();
        let mut any = false;
        self.terms.each_term(query, false, |term| {
            any = true;
            if let Some(&id) = self.vocabulary.get(term) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        });
        (ids, any)
    }

    /// Whether `query` has a term at all (stop words and punctuation alone
    /// have none).
    pub fn has_terms(&self, query: &[u8]) -> bool {
        self.query_ids(query).1
    }

    /// The score of each tool of `among` (indices into the index, each below
    /// [`len`](Self::len)), in that order; all tools when None.
    pub fn scores(&self, query: &[u8], among: Option<&[usize]>) -> Vec<f64> {
        let all: Vec<usize>;
        let places = match among {
            Some(places) => places,
            None => {
                all = (0..self.len()).collect();
                &all
            }
        };
        let (ids, _) = self.query_ids(query);
        let mut own = vec![0.0f64; self.len()];
        self.tools.add(&ids, &mut own);
        let alpha = self.ranking.server_evidence;
        let mut server = Vec::new();
        if alpha > 0.0 {
            server = vec![0.0f64; self.server_count];
            self.servers.add(&ids, &mut server);
        }
        let best = places.iter().map(|&i| own[i]).fold(0.0f64, f64::max);
        let best_server = if alpha > 0.0 {
            places
                .iter()
                .filter(|&&i| self.server_of[i] != NO_SERVER)
                .map(|&i| server[self.server_of[i] as usize])
                .fold(0.0f64, f64::max)
        } else {
            0.0
        };
        places
            .iter()
            .map(|&i| {
                let mut value = if best > 0.0 { own[i] / best } else { 0.0 };
                let s = self.server_of[i];
                if alpha > 0.0 && best_server > 0.0 && s != NO_SERVER {
                    value += alpha * (server[s as usize] / best_server);
                }
                value
            })
            .collect()
    }

    /// The places (into `among`, or tool indices when None) of the best
    /// `limit` tools, best first, equal scores in input order. With
    /// `matched_only`, a tool that no query term reaches (own score 0) is left
    /// out, unless the query has no term at all.
    pub fn rank(&self, query: &[u8], limit: usize, among: Option<&[usize]>, matched_only: bool) -> Vec<usize> {
        let scores = self.scores(query, among);
        let mut order: Vec<usize> = (0..scores.len()).collect();
        if matched_only && self.has_terms(query) {
            let (ids, _) = self.query_ids(query);
            let mut own = vec![0.0f64; self.len()];
            self.tools.add(&ids, &mut own);
            let tool = |j: usize| among.map_or(j, |places| places[j]);
            order.retain(|&j| own[tool(j)] > 0.0);
        }
        let better = |a: &usize, b: &usize| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b));
        if limit < order.len() {
            order.select_nth_unstable_by(limit, better);
            order.truncate(limit);
        }
        order.sort_unstable_by(better);
        order
    }
}

/// Calls `each` with the id of each term of `text`, adding new terms to the
/// vocabulary.
fn each_id(
    terms: &Terms,
    vocabulary: &mut FxHashMap<Box<[u8]>, u32>,
    cache: &mut PieceCache,
    text: &[u8],
    camel: bool,
    mut each: impl FnMut(u32),
) {
    let mut folded = Vec::new();
    let intern = |term: &[u8], vocabulary: &mut FxHashMap<Box<[u8]>, u32>| -> u32 {
        if let Some(&id) = vocabulary.get(term) {
            return id;
        }
        let id = vocabulary.len() as u32;
        vocabulary.insert(term.into(), id);
        id
    };
    tokens::pieces(text, camel, |piece| match piece {
        tokens::Piece::Word(word) => {
            crate::fold::Fold::Lower.apply_into(word, &mut folded);
            let id = match cache.get(folded.as_slice()) {
                Some(&id) => id,
                None => {
                    let id = terms.word(&folded).map(|term| intern(&term, vocabulary));
                    cache.insert(folded.as_slice().into(), id);
                    id
                }
            };
            if let Some(id) = id {
                each(id);
            }
        }
        tokens::Piece::Pair(pair) => {
            crate::fold::Fold::Lower.apply_into(pair, &mut folded);
            each(intern(&folded, vocabulary));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool<'a>(server: &'a str, name: &'a str, description: &'a str) -> ToolText<'a> {
        [Some(name.as_bytes()), None, Some(description.as_bytes()), Some(server.as_bytes()), None]
    }

    fn catalog() -> Vec<ToolText<'static>> {
        vec![
            tool("weather", "get_weather_by_city", "Current weather for a city"),
            tool("files", "write_file", "Create a new file or overwrite one"),
            tool("files", "read_file", "Read the contents of a file"),
            tool("maps", "geocode_address", "Convert an address to coordinates"),
            tool("maps", "reverse_geocode", "Convert coordinates to an address"),
            tool("maps", "find_nearby_places", "Places near a point: restaurants, parks"),
        ]
    }

    #[test]
    fn the_matching_tool_ranks_first() {
        let index = SearchIndex::build(&catalog(), Ranking::default());
        assert_eq!(index.rank(b"what is the weather in Paris", 2, None, false)[0], 0);
        assert_eq!(index.rank(b"read my file", 1, None, false), vec![2]);
    }

    #[test]
    fn server_evidence_lifts_the_servers_other_tools() {
        let plain = SearchIndex::build(&catalog(), Ranking { server_evidence: 0.0, ..Ranking::default() });
        let lifted = SearchIndex::build(&catalog(), Ranking::default());
        let query = b"restaurants near the address";
        let p = plain.scores(query, None);
        let l = lifted.scores(query, None);
        // reverse_geocode matches "address" and gains from its server's "restaurants".
        assert!(l[4] - p[4] > 0.0);
        assert_eq!(p[0], 0.0);
        assert_eq!(l[0], 0.0);
    }

    #[test]
    fn among_ranks_a_subset_and_ties_keep_input_order() {
        let index = SearchIndex::build(&catalog(), Ranking::default());
        assert_eq!(index.rank(b"zzz unknown", 3, Some(&[5, 1, 0]), false), vec![0, 1, 2]);
        assert_eq!(index.rank(b"zzz unknown", 3, Some(&[5, 1, 0]), true), Vec::<usize>::new());
        assert_eq!(index.rank(b"the", 2, None, true), vec![0, 1]);
        let mut files = index.rank(b"file", 5, Some(&[0, 1, 2]), true);
        files.sort_unstable();
        assert_eq!(files, vec![1, 2]);
    }

    #[test]
    fn scores_are_finite_and_bounded() {
        let index = SearchIndex::build(&catalog(), Ranking::default());
        for score in index.scores(b"convert coordinates file weather city", None) {
            assert!(score.is_finite() && (0.0..=2.0).contains(&score));
        }
    }

    #[test]
    fn empty_catalog_and_empty_query() {
        let index = SearchIndex::build(&[], Ranking::default());
        assert!(index.is_empty());
        assert!(index.rank(b"anything", 10, None, false).is_empty());
        let index = SearchIndex::build(&catalog(), Ranking::default());
        assert!(!index.has_terms(b"   ,.;"));
        assert_eq!(index.rank(b"", 2, None, true), vec![0, 1]);
    }

    #[test]
    fn hostile_text_is_indexed_in_one_pass() {
        let megabyte = "a".repeat(1 << 20);
        let nul = "\0".repeat(1 << 16);
        let words = "ab ".repeat(1 << 18);
        let tools = vec![
            tool("s", &megabyte, &words),
            tool("s", "x", &nul),
            [Some(b"\xED\xA0\x80name".as_slice()), None, Some(b"\xFF\xFE text".as_slice()), None, None],
        ];
        let index = SearchIndex::build(&tools, Ranking::default());
        assert_eq!(index.rank(b"ab", 1, None, true), vec![0]);
        assert_eq!(index.rank(b"text name", 1, None, true), vec![2]);
    }
}
