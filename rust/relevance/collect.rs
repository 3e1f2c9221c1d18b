//! Reading a catalog into term counts: each tool's terms per field, over one
//! vocabulary. A large catalog is read in contiguous parts on several
//! threads, and the parts are joined in order (each part's entries stay
//! where its thread wrote them, their term ids mapped in place), so the
//! result is the same, term ids included, as one thread reading every tool
//! in turn: a term's id is its rank in order of first appearance either way.

use rustc_hash::FxHashMap;

use super::tokens::{self, Piece, Terms};
use super::{ToolText, CAMEL, NO_SERVER, SERVER};

/// Term ids by term.
pub(super) type Vocabulary = FxHashMap<Box<[u8]>, u32>;

/// Documents as term counts: each document's `(term, counts per field)`
/// entries, and its field lengths. The entries lie in runs of consecutive
/// documents (one per part read on its own thread), kept where they were
/// written rather than copied into one array.
pub(super) struct Documents {
    runs: Vec<Run>,
    pub(super) lengths: Vec<[u32; 5]>,
}

/// Consecutive documents' entries, one document after another.
struct Run {
    /// The first document's number.
    first: usize,
    entries: Vec<(u32, [u32; 5])>,
    /// Where each document's entries start; one more at the end.
    starts: Vec<usize>,
}

impl Run {
    fn new(first: usize) -> Self {
        Run { first, entries: Vec::new(), starts: vec![0] }
    }
}

impl Default for Documents {
    fn default() -> Self {
        Documents { runs: vec![Run::new(0)], lengths: Vec::new() }
    }
}

impl Documents {
    pub(super) fn len(&self) -> usize {
        self.lengths.len()
    }

    pub(super) fn entries(&self, doc: usize) -> &[(u32, [u32; 5])] {
        // The last run starting at or before `doc` (the first starts at 0).
        let run = &self.runs[self.runs.partition_point(|run| run.first <= doc) - 1];
        let at = doc - run.first;
        &run.entries[run.starts[at]..run.starts[at + 1]]
    }

    /// Each document's entries, in document order: [`entries`](Self::entries)
    /// of every document, without looking for its run.
    pub(super) fn each(&self) -> impl Iterator<Item = &[(u32, [u32; 5])]> {
        self.runs.iter().flat_map(|run| run.starts.windows(2).map(|at| &run.entries[at[0]..at[1]]))
    }

    /// Every document's entries, in document order.
    pub(super) fn all_entries(&self) -> impl Iterator<Item = &(u32, [u32; 5])> {
        self.runs.iter().flat_map(|run| run.entries.iter())
    }

    /// Adds `other`'s documents after these, its term ids mapped by `ids`
    /// where they lie.
    fn append(&mut self, other: Documents, ids: &[u32]) {
        let first = self.len();
        for mut run in other.runs {
            for entry in &mut run.entries {
                entry.0 = ids[entry.0 as usize];
            }
            run.first += first;
            self.runs.push(run);
        }
        self.lengths.extend(other.lengths);
    }

    /// The run being written.
    fn last(&mut self) -> &mut Run {
        self.runs.last_mut().expect("documents have a run")
    }
}

/// Counts the terms of the document being written straight into its
/// entries: per term, the document it was last counted in and the place of
/// its entry there. One add per token, no hashing, and a small table (8
/// bytes a term) to look in.
#[derive(Default)]
pub(super) struct Tally {
    /// Per term id: 1 + the document it was last counted in (0: never), and
    /// its entry's place among that document's.
    seen: Vec<(u32, u32)>,
}

impl Tally {
    /// Counts one more `term` in `field` of the document after the last
    /// finished one.
    #[inline]
    pub(super) fn add(&mut self, docs: &mut Documents, term: u32, field: usize) {
        let mut one = [0; 5];
        one[field] = 1;
        self.add_counts(docs, term, one);
    }

    /// Counts `counts` more of `term`, per field, in the document after the
    /// last finished one.
    #[inline]
    pub(super) fn add_counts(&mut self, docs: &mut Documents, term: u32, counts: [u32; 5]) {
        let at = term as usize;
        if at >= self.seen.len() {
            self.seen.resize(at + 1, (0, 0));
        }
        // Documents are fewer than u32::MAX (the index's limit), and so are
        // a document's distinct terms.
        let doc = docs.lengths.len() as u32 + 1;
        let run = docs.last();
        let start = run.starts[run.starts.len() - 1];
        let seen = &mut self.seen[at];
        if seen.0 != doc {
            *seen = (doc, (run.entries.len() - start) as u32);
            run.entries.push((term, [0; 5]));
        }
        let entry = &mut run.entries[start + seen.1 as usize].1;
        for (count, more) in entry.iter_mut().zip(counts) {
            *count += more;
        }
    }

    /// Ends the document being written, of these field lengths.
    pub(super) fn finish(&mut self, docs: &mut Documents, length: [u32; 5]) {
        let run = docs.last();
        run.starts.push(run.entries.len());
        docs.lengths.push(length);
    }
}

/// The tools as documents, their vocabulary and their servers.
pub(super) struct Collected {
    pub(super) docs: Documents,
    pub(super) vocabulary: Vocabulary,
    /// Each tool's server (numbered in order of first appearance), or `NO_SERVER`.
    pub(super) server_of: Vec<u32>,
    pub(super) server_count: usize,
}

/// Below this many tools a catalog is read on one thread.
pub(super) const PART_MIN: usize = 8192;
/// At most this many threads read.
const THREADS_MAX: usize = 8;

/// Reads `tools`: the fields with a weight, and the server ids.
pub(super) fn collect(tools: &[ToolText<'_>], weights: &[f64; 5], terms: &Terms) -> Collected {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    collect_on(tools, weights, terms, threads)
}

/// [`collect`] on up to `threads` threads.
pub(super) fn collect_on(tools: &[ToolText<'_>], weights: &[f64; 5], terms: &Terms, threads: usize) -> Collected {
    let parts = threads.clamp(1, THREADS_MAX).min(tools.len() / PART_MIN).max(1);
    let size = tools.len().div_ceil(parts).max(1);
    let (docs, mut vocabulary, (server_of, server_count)) = std::thread::scope(|scope| {
        let mut chunks = tools.chunks(size);
        let first = chunks.next().unwrap_or(&[]);
        let others: Vec<_> = chunks.map(|chunk| scope.spawn(move || read_part(chunk, weights, terms))).collect();
        // This thread reads the first part, and then the server ids.
        let (mut docs, mut vocabulary) = read_part(first, weights, terms);
        let server_of = servers(tools);
        let parts: Vec<_> = others
            .into_iter()
            .map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect();
        join(&mut docs, &mut vocabulary, parts);
        (docs, vocabulary, server_of)
    });
    // The index keeps the vocabulary (the documents are dropped once the
    // postings are built): no room left over from the reservation.
    vocabulary.shrink_to_fit();
    Collected { docs, vocabulary, server_of, server_count }
}

/// Adds the later parts to the first, in order, giving each term new to the
/// vocabulary the next id.
fn join(docs: &mut Documents, vocabulary: &mut Vocabulary, parts: Vec<(Documents, Vocabulary)>) {
    for (part, words) in parts {
        // Room for every word as if new: no growing on the way.
        vocabulary.reserve(words.len());
        let ids: Vec<u32> = by_id(words)
            .into_iter()
            .map(|word| {
                let next = vocabulary.len() as u32;
                *vocabulary.entry(word).or_insert(next)
            })
            .collect();
        docs.append(part, &ids);
    }
}

/// Each tool's server, numbered in order of first appearance, and how many
/// servers there are.
fn servers(tools: &[ToolText<'_>]) -> (Vec<u32>, usize) {
    let mut ids: FxHashMap<&[u8], u32> = FxHashMap::default();
    let server_of = tools
        .iter()
        .map(|text| match text[SERVER] {
            None => NO_SERVER,
            Some(id) => {
                let next = ids.len() as u32;
                *ids.entry(id).or_insert(next)
            }
        })
        .collect();
    (server_of, ids.len())
}

/// One part's documents over its own term ids, and its vocabulary.
fn read_part<'a>(tools: &[ToolText<'a>], weights: &[f64; 5], terms: &Terms) -> (Documents, Vocabulary) {
    let mut vocabulary = Vocabulary::default();
    // Pieces as written, already turned into term ids (None: a dropped
    // piece), so a word is folded and stemmed once however often it occurs.
    // Keyed by the text itself, which outlives the part.
    let mut cache = PieceCache::<'a>::default();
    // Room for a new piece, a new term and a few entries per tool at first,
    // rather than growing through every power of two.
    let room = tools.len().min(1 << 20);
    cache.short.reserve(room);
    vocabulary.reserve(room);
    let mut folded = Vec::new();
    let mut tally = Tally::default();
    let mut docs = Documents::default();
    docs.last().entries.reserve(room * 8);
    docs.last().starts.reserve(tools.len());
    docs.lengths.reserve(tools.len());
    for text in tools {
        let mut length = [0u32; 5];
        for f in 0..5 {
            let Some(field) = text[f] else { continue };
            if weights[f] <= 0.0 {
                continue;
            }
            tokens::pieces(field, CAMEL[f], |piece| {
                // A pair and a word never have the same bytes (a word holds
                // no character of a paired script).
                let (Piece::Word(raw) | Piece::Pair(raw)) = piece;
                let id = cache.get_or_insert(field, raw, || {
                    crate::fold::Fold::Lower.apply_into(raw, &mut folded);
                    let term = match piece {
                        Piece::Word(_) => terms.word(&folded),
                        Piece::Pair(_) => Some(std::borrow::Cow::Borrowed(folded.as_slice())),
                    };
                    term.map(|term| intern(&mut vocabulary, &term))
                });
                if let Some(id) = id {
                    tally.add(&mut docs, id, f);
                    length[f] += 1;
                }
            });
        }
        tally.finish(&mut docs, length);
    }
    (docs, vocabulary)
}

/// Pieces as written, already turned into term ids (None: a dropped piece).
/// A piece of up to 15 bytes is its own key, packed into an integer with
/// its length, so a lookup compares numbers rather than following a
/// pointer back into the text; a longer one is keyed by the text itself.
#[derive(Default)]
struct PieceCache<'a> {
    /// Keyed by the piece's bytes and its length (in the last byte), in two
    /// words: 24-byte entries rather than a u128's 32.
    short: FxHashMap<(u64, u64), Option<u32>>,
    long: FxHashMap<&'a [u8], Option<u32>>,
}

impl<'a> PieceCache<'a> {
    #[inline]
    fn get_or_insert(&mut self, field: &'a [u8], piece: &'a [u8], make: impl FnOnce() -> Option<u32>) -> Option<u32> {
        let len = piece.len();
        if len < 16 {
            // `piece` lies in `field`: where sixteen bytes follow its start,
            // they are read as one number and masked to the piece (no copy
            // that the load would wait on); near the end, copied.
            let at = (piece.as_ptr() as usize).wrapping_sub(field.as_ptr() as usize);
            let window = field.get(at..at.wrapping_add(16)).filter(|w| w.as_ptr() == piece.as_ptr());
            let bytes = match window {
                Some(window) => u128::from_le_bytes(window.try_into().expect("sixteen bytes")),
                None => {
                    let mut packed = [0u8; 16];
                    packed[..len].copy_from_slice(piece);
                    u128::from_le_bytes(packed)
                }
            };
            let key = (bytes & ((1u128 << (8 * len)) - 1)) | ((len as u128) << 120);
            *self.short.entry((key as u64, (key >> 64) as u64)).or_insert_with(make)
        } else {
            *self.long.entry(piece).or_insert_with(make)
        }
    }
}

/// The id of `term`, a new one when it is new.
fn intern(vocabulary: &mut Vocabulary, term: &[u8]) -> u32 {
    if let Some(&id) = vocabulary.get(term) {
        return id;
    }
    let id = vocabulary.len() as u32;
    vocabulary.insert(term.into(), id);
    id
}

/// A vocabulary's terms in id order.
fn by_id(vocabulary: Vocabulary) -> Vec<Box<[u8]>> {
    let mut words: Vec<Box<[u8]>> = vec![Box::default(); vocabulary.len()];
    for (word, id) in vocabulary {
        words[id as usize] = word;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tools whose words repeat across the parts and also first appear in
    /// later ones, with pairs, camelCase, stop words and long pieces.
    fn texts(count: usize) -> Vec<[Vec<u8>; 3]> {
        (0..count)
            .map(|i| {
                let name = format!("get{}Item_{}", ["Weather", "File", "Stock"][i % 3], i / 7);
                let description = format!(
                    "Reads the {} of a thing {} 天气预报{} and a verylongwordthatgoesonandon{}",
                    ["file", "city", "price", "page"][i % 4],
                    i % 1000,
                    ["查询", "获取"][i % 2],
                    i % 5
                );
                let server = format!("server-{}", i / 40);
                [name.into_bytes(), description.into_bytes(), server.into_bytes()]
            })
            .collect()
    }

    #[test]
    fn parts_read_on_threads_join_to_what_one_thread_reads() {
        let owned = texts(3 * PART_MIN + 123);
        let tools: Vec<ToolText<'_>> = owned
            .iter()
            .enumerate()
            .map(|(i, [n, d, s])| [Some(n.as_slice()), None, Some(d.as_slice()), (i % 50 != 0).then_some(s.as_slice()), None])
            .collect();
        let terms = Terms::default();
        let weights = [1.5, 1.0, 1.0, 1.0, 0.0];
        let one = collect_on(&tools, &weights, &terms, 1);
        for threads in [2, 3, 16] {
            let many = collect_on(&tools, &weights, &terms, threads);
            assert!(many.docs.all_entries().eq(one.docs.all_entries()), "{threads} threads");
            for doc in 0..tools.len() {
                assert_eq!(many.docs.entries(doc), one.docs.entries(doc), "{threads} threads, document {doc}");
            }
            assert!(many.docs.each().eq((0..tools.len()).map(|doc| many.docs.entries(doc))));
            assert_eq!(many.docs.lengths, one.docs.lengths);
            assert_eq!(many.vocabulary, one.vocabulary);
            assert_eq!(many.server_of, one.server_of);
            assert_eq!(many.server_count, one.server_count);
        }
        // Term ids are in order of first appearance.
        let mut first: Vec<u32> = Vec::new();
        for &(term, _) in one.docs.all_entries() {
            if term as usize == first.len() {
                first.push(term);
            }
            assert!((term as usize) < first.len(), "term {term} before the ones under it");
        }
        assert_eq!(first.len(), one.vocabulary.len());
        assert_eq!(one.docs.len(), tools.len());
    }

    #[test]
    fn a_term_counts_once_per_document_and_field() {
        let tools: Vec<ToolText<'_>> = vec![
            [Some(b"read_file".as_slice()), None, Some(b"Read a file, any FILE: files".as_slice()) /* "a" and "any" are stop words */, Some(b"fs".as_slice()), None],
            [None, None, Some(b"file".as_slice()), None, None],
        ];
        let c = collect_on(&tools, &[1.0; 5], &Terms::default(), 1);
        let file = c.vocabulary[b"file".as_slice()];
        let read = c.vocabulary[b"read".as_slice()];
        assert_eq!(c.docs.entries(0), &[(read, [1, 0, 1, 0, 0]), (file, [1, 0, 3, 0, 0]), (c.vocabulary[b"fs".as_slice()], [0, 0, 0, 1, 0])]);
        assert_eq!(c.docs.entries(1), &[(file, [0, 0, 1, 0, 0])]);
        assert_eq!(c.docs.lengths, vec![[2, 0, 4, 1, 0], [0, 0, 1, 0, 0]]);
        assert_eq!(c.server_of, vec![0, NO_SERVER]);
    }

    #[test]
    fn each_tool_holds_its_terms_whatever_the_piece_length_and_place() {
        // Pieces of 14 to 17 bytes sharing prefixes, in the middle of a
        // field (read as a window of sixteen bytes) and at its end (copied).
        let words = ["abcdefghijklmn", "abcdefghijklmno", "abcdefghijklmnZ", "abcdefghijklmZ", "abcdefghijklmnop", "abcdefghijklmnopq", "abcdefghijklmnoX", "x1", "Ab"];
        let mut owned: Vec<String> = Vec::new();
        for (i, a) in words.iter().enumerate() {
            for b in &words[i..] {
                owned.push(format!("{a} {b}"));
                owned.push(format!("{b}-{a} tail words to read past"));
                owned.push(format!("{a}数据{b}"));
            }
        }
        let tools: Vec<ToolText<'_>> = owned.iter().map(|t| [None, None, Some(t.as_bytes()), None, None]).collect();
        let terms = Terms::default();
        let c = collect_on(&tools, &[1.0; 5], &terms, 1);
        let mut word_of: Vec<&[u8]> = vec![b""; c.vocabulary.len()];
        for (word, &id) in &c.vocabulary {
            word_of[id as usize] = word;
        }
        for (doc, text) in owned.iter().enumerate() {
            let mut want: Vec<Vec<u8>> = Vec::new();
            terms.each_term(text.as_bytes(), false, |t| want.push(t.to_vec()));
            let mut got: Vec<Vec<u8>> = Vec::new();
            for &(term, counts) in c.docs.entries(doc) {
                for _ in 0..counts[2] {
                    got.push(word_of[term as usize].to_vec());
                }
            }
            want.sort();
            got.sort();
            assert_eq!(got, want, "{text}");
        }
    }
}
