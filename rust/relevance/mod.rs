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
//! bests taken over the tools being ranked. Servers saturate at their own
//! `server_k1`: a server is long, and at a tool's `k1` a word that any of its
//! tools holds would count nearly in full.
//!
//! **Synonyms.** A query term also reaches the tools that hold one of its
//! synonyms (`synonyms`, a small built-in English lexicon), at a fraction of
//! the weight: for each term of the query, a document counts the best of the
//! term's own contribution and `synonyms` times each synonym's. A synonym
//! that is itself a term of the query is not counted again.
//!
//! **Path words.** A query that mentions a file path (`/root/notes.md`,
//! `~/a`) also asks for the words "file" and "path" ([`PATH_WORDS`]): the
//! tools that read and write files say those, not the path's own words.
//!
//! Everything that does not depend on the query (each term's contribution to
//! each tool) is computed when the index is built, so a query only adds up
//! the postings of its terms. Floats are added in one fixed order (query terms
//! in order of first appearance, fields in [`FIELDS`] order), which the
//! reference follows, so both give the same scores to the last bit; equal
//! scores rank in input order.

mod collect;
mod synonyms;
mod tokens;

use collect::{Documents, Tally, Vocabulary};
pub use synonyms::{FORMATS, SYNONYMS};
use synonyms::Lexicon;
pub use tokens::{mentions_path, steps, terms, PATH_WORDS, STEM_MAX, STOPWORDS};
use tokens::Terms;

/// The fields of a tool, in the order they are scored.
pub const FIELDS: [&str; 5] = ["name", "title", "description", "server", "params"];
const SERVER: usize = 3;
/// The fields whose words are also cut at camelCase: identifiers.
const CAMEL: [bool; 5] = [true, false, false, true, true];

/// How text is weighed. Every number is finite; `k1 > 0`, `server_k1 > 0`,
/// `0 <= b <= 1`, weights and `server_evidence` `>= 0`, `0 <= synonyms <= 1`
/// (the binding checks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ranking {
    pub weights: [f64; 5],
    /// The tools' term-frequency saturation.
    pub k1: f64,
    /// The servers' saturation: a server is as long as all its tools, and
    /// with a tool's `k1` any word its tools hold anywhere counts nearly in
    /// full; a larger one lets a server's score grow with how much of it is
    /// about the word.
    pub server_k1: f64,
    pub b: f64,
    pub server_evidence: f64,
    /// The weight of a synonym of a query term, relative to the term; 0
    /// turns the lexicon off.
    pub synonyms: f64,
    /// Whether a query that mentions a file path ([`mentions_path`]) also
    /// asks for the words of [`PATH_WORDS`].
    pub path_words: bool,
    /// Whether a query of several steps ([`steps`]) is also ranked step by
    /// step: a tool's score is then its score for the whole query plus its
    /// score for each step that has a term.
    pub steps: bool,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking { weights: [2.0, 1.0, 0.5, 1.0, 0.0], k1: 1.2, server_k1: 3.0, b: 0.9, server_evidence: 1.0, synonyms: 0.7, path_words: true, steps: true }
    }
}

/// One tool's text: each field generalized UTF-8, or None.
pub type ToolText<'a> = [Option<&'a [u8]>; 5];

/// Per term, the documents holding it and what it adds to each, all lists
/// in one array (`starts[term]..starts[term + 1]`), each in document order.
#[derive(Default)]
struct Postings {
    starts: Vec<usize>,
    docs: Vec<u32>,
    contributions: Vec<f64>,
}

impl Postings {
    /// BM25F over `docs`, saturating at `k1`.
    fn build(docs: &Documents, vocabulary: usize, ranking: &Ranking, k1: f64) -> Self {
        let total = docs.len();
        let mut averages = [0.0f64; 5];
        for (f, average) in averages.iter_mut().enumerate() {
            let sum: u64 = docs.lengths.iter().map(|l| u64::from(l[f])).sum();
            *average = if total > 0 { sum as f64 / total as f64 } else { 0.0 };
        }
        // Every counted field has a weight (fields without one are not read).
        let mut df = vec![0u32; vocabulary];
        for &(term, _) in docs.all_entries() {
            df[term as usize] += 1;
        }
        let idf: Vec<f64> = df.iter().map(|&n| idf(n, total)).collect();
        let mut starts = Vec::with_capacity(vocabulary + 1);
        let mut next = 0usize;
        for &n in &df {
            starts.push(next);
            next += n as usize;
        }
        starts.push(next);
        let mut fill = starts[..vocabulary].to_vec();
        let mut doc_of = vec![0u32; next];
        let mut contributions = vec![0.0f64; next];
        // Documents in order, so each list is in document order.
        for (doc, (entries, length)) in docs.each().zip(&docs.lengths).enumerate() {
            for &(term, tf) in entries {
                let mut x = 0.0f64;
                for f in 0..5 {
                    let weight = ranking.weights[f];
                    if weight > 0.0 && tf[f] > 0 {
                        let norm = 1.0 - ranking.b + ranking.b * f64::from(length[f]) / averages[f];
                        x += weight * f64::from(tf[f]) / norm;
                    }
                }
                // x > 0: the term was counted in a field with a weight.
                let slot = &mut fill[term as usize];
                doc_of[*slot] = doc as u32;
                contributions[*slot] = idf[term as usize] * x / (k1 + x);
                *slot += 1;
            }
        }
        Postings { starts, docs: doc_of, contributions }
    }

    fn postings(&self, term: u32) -> impl Iterator<Item = (usize, f64)> + '_ {
        let range = self.starts[term as usize]..self.starts[term as usize + 1];
        self.docs[range.clone()].iter().zip(&self.contributions[range]).map(|(&doc, &c)| (doc as usize, c))
    }

    /// Adds the query's groups, one after another, into `scores`: a group
    /// without synonyms adds its term's postings; one with synonyms adds,
    /// per document, the best of the term's contribution and `weight` times
    /// each synonym's (`best` is scratch space as long as `scores`, all 0).
    fn add(&self, groups: &[Group], weight: f64, scores: &mut [f64], best: &mut [f64]) {
        let mut touched: Vec<usize> = Vec::new();
        for group in groups {
            if group.synonyms.is_empty() {
                if let Some(term) = group.term {
                    for (doc, contribution) in self.postings(term) {
                        scores[doc] += contribution;
                    }
                }
                continue;
            }
            // Every contribution is > 0, so 0 marks a document not reached yet.
            if let Some(term) = group.term {
                for (doc, contribution) in self.postings(term) {
                    best[doc] = contribution;
                    touched.push(doc);
                }
            }
            for &synonym in &group.synonyms {
                for (doc, contribution) in self.postings(synonym) {
                    let value = weight * contribution;
                    if best[doc] == 0.0 {
                        touched.push(doc);
                    }
                    best[doc] = best[doc].max(value);
                }
            }
            for doc in touched.drain(..) {
                if best[doc] != 0.0 {
                    scores[doc] += best[doc];
                    best[doc] = 0.0;
                }
            }
        }
    }
}

fn idf(count: u32, total: usize) -> f64 {
    let (n, total) = (f64::from(count), total as f64);
    (1.0 + (total - n + 0.5) / (n + 0.5)).ln()
}

/// One distinct term of a query: its id (None when no tool holds it) and
/// the ids of its synonyms that some tool holds and the query does not.
struct Group {
    term: Option<u32>,
    synonyms: Vec<u32>,
}

/// The index: terms, tools and servers.
pub struct SearchIndex {
    terms: Terms,
    lexicon: Lexicon,
    vocabulary: Vocabulary,
    tools: Postings,
    servers: Postings,
    /// Each tool's server, or `NO_SERVER`.
    server_of: Vec<u32>,
    server_count: usize,
    ranking: Ranking,
}

const NO_SERVER: u32 = u32::MAX;

impl SearchIndex {
    /// Indexes `tools` (at most `u32::MAX - 1` of them).
    pub fn build(tools: &[ToolText<'_>], ranking: Ranking) -> Self {
        let terms = Terms::default();
        let collect::Collected { docs, vocabulary, server_of, server_count } =
            collect::collect(tools, &ranking.weights, &terms);
        let servers = || {
            let merged = merge_servers(&docs, &server_of, server_count);
            Postings::build(&merged, vocabulary.len(), &ranking, ranking.server_k1)
        };
        let (tools, servers) = if docs.len() < collect::PART_MIN {
            (Postings::build(&docs, vocabulary.len(), &ranking, ranking.k1), servers())
        } else {
            // A large catalog's tools on this thread, its servers on another.
            std::thread::scope(|scope| {
                let servers = scope.spawn(servers);
                let tools = Postings::build(&docs, vocabulary.len(), &ranking, ranking.k1);
                (tools, servers.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            })
        };
        SearchIndex {
            tools,
            servers,
            lexicon: Lexicon::new(&terms),
            terms,
            vocabulary,
            server_of,
            server_count,
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

    /// The query's distinct terms, in order of first appearance (then the
    /// path words, when it mentions a path), each with its synonyms (with
    /// `synonyms` > 0), leaving out those that reach no tool.
    fn query_groups(&self, query: &[u8]) -> Vec<Group> {
        let mut words: Vec<Vec<u8>> = Vec::new();
        let mut add = |term: &[u8]| {
            if !words.iter().any(|w| w == term) {
                words.push(term.to_vec());
            }
        };
        self.terms.each_term(query, false, &mut add);
        if self.ranking.path_words && mentions_path(query) {
            for word in PATH_WORDS {
                self.terms.each_term(word.as_bytes(), false, &mut add);
            }
        }
        let use_synonyms = self.ranking.synonyms > 0.0;
        words
            .iter()
            .filter_map(|word| {
                let term = self.vocabulary.get(word.as_slice()).copied();
                let synonyms: Vec<u32> = if use_synonyms {
                    self.lexicon
                        .of(word)
                        .iter()
                        .filter(|s| !words.iter().any(|w| w.as_slice() == &***s))
                        .filter_map(|s| self.vocabulary.get(s).copied())
                        .collect()
                } else {
                    Vec::new()
                };
                (term.is_some() || !synonyms.is_empty()).then_some(Group { term, synonyms })
            })
            .collect()
    }

    /// Whether `query` has a term at all (stop words and punctuation alone
    /// have none; a path gives the path words).
    pub fn has_terms(&self, query: &[u8]) -> bool {
        let mut any = self.ranking.path_words && mentions_path(query);
        self.terms.each_term(query, false, |_| any = true);
        any
    }

    /// The score of each tool of `among` (indices into the index, each below
    /// [`len`](Self::len)), in that order; all tools when None.
    pub fn scores(&self, query: &[u8], among: Option<&[usize]>) -> Vec<f64> {
        let scores = self.score(query, among);
        match among {
            Some(places) => places.iter().map(|&i| scores.value(i)).collect(),
            None => (0..self.len()).map(|i| scores.value(i)).collect(),
        }
    }

    /// What the query is scored as: the whole query, then, with `steps` on
    /// and at least two steps that have a term, each of those steps.
    fn parts<'q>(&self, query: &'q [u8]) -> Vec<&'q [u8]> {
        let mut parts = vec![query];
        if self.ranking.steps {
            let mut each: Vec<&[u8]> = steps(query).into_iter().filter(|step| self.has_terms(step)).collect();
            if each.len() >= 2 {
                parts.append(&mut each);
            }
        }
        parts
    }

    /// Every tool's score for the query, the bests taken over `among` (all
    /// tools when None): its parts when it has one, the sum of its parts'
    /// scores otherwise.
    fn score(&self, query: &[u8], among: Option<&[usize]>) -> Scores<'_> {
        let parts = self.parts(query);
        if parts.len() == 1 {
            return Scores::One(self.score_part(query, among));
        }
        let mut sum = vec![0.0f64; self.len()];
        // Each tool once, however often `among` names it.
        let distinct = among.map(|places| {
            let mut distinct = places.to_vec();
            distinct.sort_unstable();
            distinct.dedup();
            distinct
        });
        for part in parts {
            let scored = self.score_part(part, among);
            match &distinct {
                Some(places) => places.iter().for_each(|&i| sum[i] += scored.value(i)),
                None => sum.iter_mut().enumerate().for_each(|(i, total)| *total += scored.value(i)),
            }
        }
        Scores::Summed(sum)
    }

    /// What every score of one query (or step) is made of, the bests taken
    /// over `among` (all tools when None).
    fn score_part(&self, query: &[u8], among: Option<&[usize]>) -> Scored<'_> {
        let groups = self.query_groups(query);
        let weight = self.ranking.synonyms;
        let mut own = vec![0.0f64; self.len()];
        // Scratch space for the groups with synonyms only.
        let mut best = if groups.iter().any(|g| !g.synonyms.is_empty()) {
            vec![0.0f64; self.len().max(self.server_count)]
        } else {
            Vec::new()
        };
        self.tools.add(&groups, weight, &mut own, &mut best);
        let alpha = self.ranking.server_evidence;
        let mut server = Vec::new();
        if alpha > 0.0 {
            server = vec![0.0f64; self.server_count];
            self.servers.add(&groups, weight, &mut server, &mut best);
        }
        let best = match among {
            Some(places) => places.iter().map(|&i| own[i]).fold(0.0f64, f64::max),
            None => own.iter().copied().fold(0.0f64, f64::max),
        };
        // Without server evidence there are no server scores (`server` is empty).
        let best_server = match among {
            Some(places) if alpha > 0.0 => places
                .iter()
                .map(|&i| self.server_of[i])
                .filter(|&s| s != NO_SERVER)
                .map(|s| server[s as usize])
                .fold(0.0f64, f64::max),
            Some(_) => 0.0,
            // Every server has a tool: the best of all tools' servers is the
            // best of all servers.
            None => server.iter().copied().fold(0.0f64, f64::max),
        };
        // Each server's part of its tools' scores, once per server.
        let lift: Vec<f64> = if alpha > 0.0 && best_server > 0.0 {
            server.iter().map(|&score| alpha * (score / best_server)).collect()
        } else {
            Vec::new()
        };
        Scored { index: self, own, lift, best }
    }

    /// The places (into `among`, or tool indices when None) of the best
    /// `limit` tools, best first, equal scores in input order. With
    /// `matched_only`, a tool scoring 0 (no query term in it nor in its
    /// server's tools) is left out, unless the query has no term at all.
    pub fn rank(&self, query: &[u8], limit: usize, among: Option<&[usize]>, matched_only: bool) -> Vec<usize> {
        let keep_zero = !(matched_only && self.has_terms(query));
        let count = among.map_or(self.len(), <[usize]>::len);
        match self.score(query, among) {
            Scores::One(scored) => {
                let reciprocal = 1.0 / scored.best;
                best_of(count, limit, keep_zero, among, |i| scored.value(i), |i| scored.estimate(i, reciprocal))
            }
            Scores::Summed(sum) => best_of(count, limit, keep_zero, among, |i| sum[i], |i| sum[i]),
        }
    }
}

/// The places of the best `limit` of `count` tools (places into `among`,
/// or tool indices), best first, equal scores in input order; `value(i)` is
/// tool `i`'s score and `estimate(i)` within a billionth of it. Without
/// `keep_zero`, tools scoring 0 (or NaN) are left out.
fn best_of(
    count: usize,
    limit: usize,
    keep_zero: bool,
    among: Option<&[usize]>,
    value: impl Fn(usize) -> f64,
    estimate: impl Fn(usize) -> f64,
) -> Vec<usize> {
    // The best `limit` seen so far, the worst on top: one pass over the
    // tools, and a tool that does not beat the worst kept is not kept.
    let mut kept: std::collections::BinaryHeap<Kept> = std::collections::BinaryHeap::with_capacity(limit.min(count) + 1);
    // Most tools score well below the worst kept once there are `limit`,
    // and a multiplication tells so without the division: the estimate
    // is within a few units in the last place of the score (a billionth
    // is ample room), so a tool it puts clearly below the worst kept is
    // below it; any other is scored exactly. NaN and infinities are
    // never below, and so always scored exactly.
    let mut bar = f64::NEG_INFINITY;
    for place in 0..count {
        let i = among.map_or(place, |places| places[place]);
        if estimate(i) * (1.0 + 1e-9) < bar {
            continue;
        }
        let score = value(i);
        if !keep_zero && (score.is_nan() || score <= 0.0) {
            continue;
        }
        let entry = Kept { value: score, place };
        if kept.len() < limit {
            kept.push(entry);
        } else if kept.peek().is_some_and(|worst| entry < *worst) {
            kept.pop();
            kept.push(entry);
        } else {
            continue;
        }
        if kept.len() == limit {
            bar = kept.peek().map_or(f64::NEG_INFINITY, |worst| worst.value);
            // Far above the subnormals, where an estimate's error is
            // relative; at or below, every tool is scored exactly.
            if !(bar.is_finite() && bar > 1e-290) {
                bar = f64::NEG_INFINITY;
            }
        }
    }
    // Ascending is best first.
    kept.into_sorted_vec().into_iter().map(|entry| entry.place).collect()
}

/// A query's scores: of one part, or summed over its parts (by tool index).
enum Scores<'a> {
    One(Scored<'a>),
    Summed(Vec<f64>),
}

impl Scores<'_> {
    fn value(&self, i: usize) -> f64 {
        match self {
            Scores::One(scored) => scored.value(i),
            Scores::Summed(sum) => sum[i],
        }
    }
}

/// A query's parts of every score: tools' own sums and their best, and
/// what each server adds to its tools (empty: nothing).
struct Scored<'a> {
    index: &'a SearchIndex,
    own: Vec<f64>,
    lift: Vec<f64>,
    best: f64,
}

impl Scored<'_> {
    /// Tool `i`'s score: `own / best + server_evidence * (server / best server)`.
    #[inline]
    fn value(&self, i: usize) -> f64 {
        self.lifted(i, if self.best > 0.0 { self.own[i] / self.best } else { 0.0 })
    }

    /// [`value`](Self::value) with the division by the best own score
    /// made a multiplication by its `reciprocal`.
    #[inline]
    fn estimate(&self, i: usize, reciprocal: f64) -> f64 {
        self.lifted(i, if self.best > 0.0 { self.own[i] * reciprocal } else { 0.0 })
    }

    /// Tool `i`'s share of its own best, `own`, with its server's part added.
    #[inline]
    fn lifted(&self, i: usize, own: f64) -> f64 {
        let s = self.index.server_of[i];
        if !self.lift.is_empty() && s != NO_SERVER {
            own + self.lift[s as usize]
        } else {
            own
        }
    }
}

/// A ranked tool: ordered best first (the higher score, then the earlier place).
struct Kept {
    value: f64,
    place: usize,
}

impl Ord for Kept {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.value.total_cmp(&self.value).then(self.place.cmp(&other.place))
    }
}

impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Kept {}

/// Each server as one document: its tools' fields added up, but for the
/// server field, its id's terms once (from its first tool).
fn merge_servers(docs: &Documents, server_of: &[u32], count: usize) -> Documents {
    let mut tally = Tally::default();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (doc, &server) in server_of.iter().enumerate() {
        if server != NO_SERVER {
            members[server as usize].push(doc);
        }
    }
    let mut servers = Documents::default();
    for tools in &members {
        let mut length = [0u32; 5];
        for (k, &doc) in tools.iter().enumerate() {
            for &(term, mut tf) in docs.entries(doc) {
                if k > 0 {
                    tf[SERVER] = 0;
                }
                if tf != [0; 5] {
                    tally.add_counts(&mut servers, term, tf);
                }
            }
            for f in (0..5).filter(|&f| f != SERVER || k == 0) {
                length[f] += docs.lengths[doc][f];
            }
        }
        tally.finish(&mut servers, length);
    }
    servers
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
    fn a_larger_server_k1_weighs_how_much_of_a_server_is_about_the_word() {
        let tools = vec![
            tool("desk", "keep_note", "Keep a note"),
            tool("desk", "send_mail", "Send an email to a contact"),
            tool("desk", "add_event", "Add an event to the calendar"),
            tool("desk", "get_weather", "Weather forecast for a city"),
            tool("notes", "add_note", "Add a note to the notebook"),
            tool("notes", "find_note", "Find a note by its title"),
            tool("notes", "delete_note", "Delete a note"),
        ];
        let with = |server_k1: f64, server_evidence: f64| {
            let ranking = Ranking { server_k1, server_evidence, ..Ranking::default() };
            SearchIndex::build(&tools, ranking).scores(b"note", None)
        };
        // send_mail holds no "note": its score is its server's share of the best server's.
        let (saturated, graded) = (with(1.2, 1.0)[1], with(6.0, 1.0)[1]);
        assert!(graded > 0.0 && graded < saturated, "{graded} {saturated}");
        // The tools' own scores do not depend on it.
        assert_eq!(with(1.2, 0.0), with(6.0, 0.0));
    }

    #[test]
    fn a_path_in_the_query_asks_for_files() {
        let tools = vec![
            tool("notes", "keep_note", "Keep a note for later"),
            tool("files", "write_file", "Create or overwrite a file at a path"),
            tool("files", "list_directory", "List the entries of a directory"),
        ];
        let on = SearchIndex::build(&tools, Ranking::default());
        let off = SearchIndex::build(&tools, Ranking { path_words: false, ..Ranking::default() });
        let query = b"keep it in /srv/out.txt";
        assert_eq!(off.rank(query, 3, None, true), vec![0]);
        // write_file holds "file" and "path"; list_directory is of its server.
        assert_eq!(on.rank(query, 3, None, true), vec![0, 1, 2]);
        // Words the query holds itself come first and count once.
        assert_eq!(on.scores(b"file path /x", None), on.scores(b"file path", None));
        assert!(on.has_terms(b"/x") && !off.has_terms(b"/x"));
        assert!(on.scores(b"and/or", None).iter().all(|&s| s == 0.0));
    }

    #[test]
    fn each_step_of_a_task_gets_its_tools() {
        let tools = vec![
            tool("news", "get_news", "Latest news headlines"),
            tool("news", "news_search", "Search news headlines"),
            tool("files", "put_text", "Write text to a file"),
            tool("files", "read_file", "Read a file"),
            tool("files", "list_dir", "List a folder"),
        ];
        let on = SearchIndex::build(&tools, Ranking { server_evidence: 0.0, ..Ranking::default() });
        let off = SearchIndex::build(&tools, Ranking { server_evidence: 0.0, steps: false, ..Ranking::default() });
        let query = b"Find the latest news headlines. Then write them to a file";
        // Whole, the news step's words keep put_text below the news tools; by steps it rises.
        assert_eq!(off.rank(query, 2, None, true), vec![0, 1]);
        assert_eq!(on.rank(query, 2, None, true), vec![0, 2]);
        // One step alone (or steps without terms) is the whole query.
        assert_eq!(on.scores(b"latest news and the", None), off.scores(b"latest news and the", None));
        // Each tool once, however often `among` names it.
        let among = [2, 0, 2];
        let scores = on.scores(query, Some(&among));
        assert_eq!(scores[0], scores[2]);
        assert_eq!(on.rank(query, 3, Some(&among), true), rank_by_sorting(&on, query, 3, Some(&among), true));
    }

    #[test]
    fn steps_are_cut_at_sentence_ends_and_joining_words() {
        let cut = |text: &str| steps(text.as_bytes()).iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect::<Vec<_>>();
        assert_eq!(cut("find it. Then save it"), ["find it", " ", " save it"]);
        assert_eq!(cut("salt AND pepper;x"), ["salt ", " pepper;x"]);
        assert_eq!(cut("/root/a.md brand thenar"), ["/root/a.md brand thenar"]);
        assert_eq!(cut("获取。热榜"), ["获取", "热榜"]);
        assert_eq!(cut("café and tea"), ["café ", " tea"]);
        assert_eq!(cut(""), [""]);
    }

    #[test]
    fn synonyms_reach_tools_at_a_lower_weight() {
        let off = SearchIndex::build(&catalog(), Ranking { synonyms: 0.0, ..Ranking::default() });
        let on = SearchIndex::build(&catalog(), Ranking::default());
        // "record" is no tool's word; its synonym "write" is write_file's.
        assert_eq!(off.rank(b"record notes", 6, None, true), Vec::<usize>::new());
        assert_eq!(on.rank(b"record notes", 1, None, true), vec![1]);
        // The word itself counts more than its synonym.
        let both = on.scores(b"write", None);
        let synonym = on.scores(b"save", None);
        assert!(synonym[1] > 0.0 && synonym[1] <= both[1]);
    }

    #[test]
    fn a_word_of_the_name_outweighs_repeats_in_the_description() {
        let tools = vec![
            tool("a", "translate_text", "Turn text from one language into another"),
            tool("b", "dictionary", "Translate text; translate a phrase"),
            tool("c", "get_time", "The current time"),
            tool("d", "weather", "Forecast for a city"),
        ];
        let index = SearchIndex::build(&tools, Ranking::default());
        assert_eq!(index.rank(b"translate", 2, None, true), vec![0, 1]);
        let before = Ranking { weights: [1.5, 1.0, 1.0, 1.0, 0.0], ..Ranking::default() };
        assert_eq!(SearchIndex::build(&tools, before).rank(b"translate", 2, None, true), vec![1, 0]);
    }

    #[test]
    fn the_lexicon_reaches_office_formats() {
        let tools = vec![
            tool("office", "excel_read_sheet", "Read the cells of a workbook"),
            tool("office", "add_slide", "Add a slide to a presentation"),
            tool("files", "write_file", "Write text to a path"),
        ];
        let index = SearchIndex::build(&tools, Ranking::default());
        assert_eq!(index.rank(b"open budget.xlsx", 1, None, false), vec![0]);
        assert_eq!(index.rank(b"a pptx deck", 1, None, true), vec![1]);
        let off = SearchIndex::build(&tools, Ranking { synonyms: 0.0, path_words: false, ..Ranking::default() });
        assert!(off.rank(b"xlsx pptx", 3, None, true).is_empty());
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

    /// `rank` as its documentation says it: every score sorted, best first,
    /// equal scores in input order, then the first `limit`.
    fn rank_by_sorting(index: &SearchIndex, query: &[u8], limit: usize, among: Option<&[usize]>, matched_only: bool) -> Vec<usize> {
        let scores = index.scores(query, among);
        let mut order: Vec<usize> = (0..scores.len()).collect();
        if matched_only && index.has_terms(query) {
            order.retain(|&j| scores[j] > 0.0);
        }
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        order.truncate(limit);
        order
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 400, ..Default::default() })]

        /// Few words, so that many scores tie; weights from the smallest
        /// to the largest a Ranking allows, where scores underflow to
        /// subnormals or overflow to infinity and NaN.
        #[test]
        fn rank_keeps_what_sorting_every_score_keeps(
            tools in proptest::collection::vec((0usize..4, proptest::collection::vec(0usize..6, 0..5), proptest::collection::vec(0usize..6, 0..8)), 0..40),
            query in proptest::collection::vec(0usize..8, 0..7),
            scale in proptest::sample::select(vec![1.0, 1e-300, 5e-324, 1e-160, 1e300, f64::MAX]),
            evidence in proptest::sample::select(vec![0.0, 1.0, 1e-310, 1e300]),
            synonyms in proptest::sample::select(vec![0.0, 0.7]),
            limit in 0usize..45,
            among in proptest::option::of(proptest::collection::vec(0usize..40, 0..50)),
            matched_only: bool,
        ) {
            const WORDS: [&str; 8] = ["file", "write", "save", "weather", "city", "note", "zzz", "and"];
            let text = |words: &[usize]| words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
            let owned: Vec<(String, String, String)> =
                tools.iter().map(|(server, name, description)| (format!("s{server}"), text(name), text(description))).collect();
            let catalog: Vec<ToolText<'_>> = owned.iter().map(|(s, n, d)| tool(s, n, d)).collect();
            let ranking = Ranking {
                weights: [2.0 * scale, 0.0, 0.5 * scale, scale, 0.0],
                server_evidence: evidence,
                synonyms,
                ..Ranking::default()
            };
            let index = SearchIndex::build(&catalog, ranking);
            let among: Option<Vec<usize>> = among.map(|places| places.into_iter().filter(|&i| i < catalog.len()).collect());
            let query = text(&query);
            proptest::prop_assert_eq!(
                index.rank(query.as_bytes(), limit, among.as_deref(), matched_only),
                rank_by_sorting(&index, query.as_bytes(), limit, among.as_deref(), matched_only)
            );
        }
    }

    #[test]
    fn rank_keeps_the_best_of_a_large_catalog() {
        // Past the first `limit`, most tools are told apart by the estimate.
        let owned: Vec<(String, String)> = (0..3000)
            .map(|i| (format!("server{}", i % 37), format!("{} {} file note", ["write", "save", "city"][i % 3], "weather ".repeat(i % 5))))
            .collect();
        let catalog: Vec<ToolText<'_>> = owned.iter().map(|(s, d)| tool(s, "tool", d)).collect();
        let index = SearchIndex::build(&catalog, Ranking::default());
        for query in [&b"weather"[..], b"write a file", b"save the city weather note", b"zzz"] {
            for limit in [1, 20, 500, 5000] {
                assert_eq!(index.rank(query, limit, None, true), rank_by_sorting(&index, query, limit, None, true));
            }
        }
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
