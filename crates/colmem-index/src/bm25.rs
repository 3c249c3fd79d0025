//! The tantivy BM25 backend: an English analyzer (lowercasing, stop words,
//! Snowball stemming) and the filter applied by a `FilterCollector` on the
//! fragment-id fast field, so documents outside the filter never enter the top-k.
//!
//! The live index sits in a RAM directory; [`LexicalIndex::save`] writes a
//! snapshot of its files, which holds no text of purged fragments: a purge
//! deletes, commits, merges every segment and collects garbage.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::directory::{MmapDirectory, RamDirectory};
use tantivy::query::BooleanQuery;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
    Token, TokenFilter, TokenStream, Tokenizer,
};
use tantivy::{Directory, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::admit::Admit;
use crate::error::{Error, Result};
use crate::lemma::normal_form;
use crate::lexical::{LexicalHit, LexicalIndex};

const BACKEND: &str = "tantivy";
const ANALYZER: &str = "colmem_en";
const WRITER_MEMORY: usize = 20_000_000;

struct Live {
    dir: RamDirectory,
    index: Index,
    writer: IndexWriter,
    reader: IndexReader,
    id: Field,
    text: Field,
}

/// BM25 full-text search on tantivy.
pub struct TantivyBm25 {
    live: RwLock<Live>,
    /// Serialises writers (the `IndexWriter` needs `&mut` for merges).
    writing: Mutex<()>,
}

impl std::fmt::Debug for TantivyBm25 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TantivyBm25")
            .field("len", &self.len())
            .finish()
    }
}

fn err(e: impl std::fmt::Display) -> Error {
    Error::backend(BACKEND, e)
}

fn schema() -> (Schema, Field, Field) {
    let mut builder = Schema::builder();
    let id = builder.add_u64_field("id", INDEXED | FAST | STORED);
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(ANALYZER)
        .set_index_option(IndexRecordOption::WithFreqs);
    let text = builder.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(indexing),
    );
    (builder.build(), id, text)
}

fn english() -> Result<TextAnalyzer> {
    let stop_words = StopWordFilter::new(Language::English).ok_or_else(|| {
        err("no English stop-word list; build tantivy with its stopwords feature")
    })?;
    Ok(TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(stop_words)
        .filter(BaseForms)
        .filter(Stemmer::new(Language::English))
        .build())
}

/// Takes words to their normal form ([`normal_form`]) before stemming: short forms in
/// full, irregular plurals in the singular, irregular verbs in their base form.
#[derive(Clone, Copy)]
struct BaseForms;

impl TokenFilter for BaseForms {
    type Tokenizer<T: Tokenizer> = BaseFormsFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> BaseFormsFilter<T> {
        BaseFormsFilter(tokenizer)
    }
}

#[derive(Clone)]
struct BaseFormsFilter<T>(T);

impl<T: Tokenizer> Tokenizer for BaseFormsFilter<T> {
    type TokenStream<'a> = BaseFormsStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        BaseFormsStream(self.0.token_stream(text))
    }
}

struct BaseFormsStream<S>(S);

impl<S: TokenStream> TokenStream for BaseFormsStream<S> {
    fn advance(&mut self) -> bool {
        if !self.0.advance() {
            return false;
        }
        if let Some(base) = normal_form(&self.0.token().text) {
            self.0.token_mut().text = base.to_owned();
        }
        true
    }

    fn token(&self) -> &Token {
        self.0.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.0.token_mut()
    }
}

impl Live {
    fn open(dir: RamDirectory, index: Index) -> Result<Live> {
        index.tokenizers().register(ANALYZER, english()?);
        let schema = index.schema();
        let id = schema
            .get_field("id")
            .map_err(|e| Error::corrupt(Path::new("tantivy"), e.to_string()))?;
        let text = schema
            .get_field("text")
            .map_err(|e| Error::corrupt(Path::new("tantivy"), e.to_string()))?;
        let writer = index
            .writer_with_num_threads(1, WRITER_MEMORY)
            .map_err(err)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(err)?;
        Ok(Live {
            dir,
            index,
            writer,
            reader,
            id,
            text,
        })
    }

    fn empty() -> Result<Live> {
        let dir = RamDirectory::create();
        let (schema, _, _) = schema();
        let index = Index::create(dir.clone(), schema, Default::default()).map_err(err)?;
        Live::open(dir, index)
    }

    fn commit(&mut self) -> Result<()> {
        self.writer.commit().map_err(err)?;
        self.reader.reload().map_err(err)
    }
}

impl TantivyBm25 {
    /// An empty index in memory.
    pub fn new() -> Result<Self> {
        Ok(TantivyBm25 {
            live: RwLock::new(Live::empty()?),
            writing: Mutex::new(()),
        })
    }

    fn read(&self) -> RwLockReadGuard<'_, Live> {
        self.live.read().unwrap_or_else(|p| p.into_inner())
    }

    fn with_writer<T>(&self, f: impl FnOnce(&mut Live) -> Result<T>) -> Result<T> {
        let _writing: MutexGuard<'_, ()> = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let mut live = self.live.write().unwrap_or_else(|p| p.into_inner());
        f(&mut live)
    }
}

impl LexicalIndex for TantivyBm25 {
    fn name(&self) -> &'static str {
        "tantivy-bm25"
    }

    fn len(&self) -> usize {
        self.read().reader.searcher().num_docs() as usize
    }

    fn insert(&self, id: u64, text: &str) -> Result<()> {
        self.with_writer(|live| {
            live.writer.delete_term(Term::from_field_u64(live.id, id));
            let mut doc = TantivyDocument::default();
            doc.add_u64(live.id, id);
            doc.add_text(live.text, text);
            live.writer.add_document(doc).map_err(err)?;
            Ok(())
        })
    }

    fn remove(&self, id: u64) -> Result<()> {
        self.with_writer(|live| {
            live.writer.delete_term(Term::from_field_u64(live.id, id));
            Ok(())
        })
    }

    fn purge(&self, ids: &[u64]) -> Result<()> {
        self.with_writer(|live| {
            for &id in ids {
                live.writer.delete_term(Term::from_field_u64(live.id, id));
            }
            live.commit()?;
            let segments = live.index.searchable_segment_ids().map_err(err)?;
            if !segments.is_empty() {
                live.writer.merge(&segments).wait().map_err(err)?;
            }
            live.writer.garbage_collect_files().wait().map_err(err)?;
            live.reader.reload().map_err(err)
        })
    }

    fn clear(&self) -> Result<()> {
        self.with_writer(|live| {
            *live = Live::empty()?;
            Ok(())
        })
    }

    fn commit(&self) -> Result<()> {
        self.with_writer(Live::commit)
    }

    fn search(&self, query: &str, k: usize, admit: &Admit) -> Result<Vec<LexicalHit>> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let live = self.read();
        let mut analyzer = live.index.tokenizer_for_field(live.text).map_err(err)?;
        let mut terms = Vec::new();
        let mut stream = analyzer.token_stream(query);
        while let Some(token) = stream.next() {
            terms.push(Term::from_field_text(live.text, &token.text));
        }
        terms.sort();
        terms.dedup();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let query = BooleanQuery::new_multiterms_query(terms);
        let searcher = live.reader.searcher();
        let top = TopDocs::with_limit(k).order_by_score();
        let found = match admit {
            Admit::All => searcher.search(&query, &top).map_err(err)?,
            Admit::Only(ids) => {
                let ids = ids.clone();
                let filtered =
                    FilterCollector::new("id".to_owned(), move |id: u64| ids.contains(id), top);
                searcher.search(&query, &filtered).map_err(err)?
            }
        };
        let mut hits = Vec::with_capacity(found.len());
        for (score, address) in found {
            let doc: TantivyDocument = searcher.doc(address).map_err(err)?;
            let id = doc
                .get_first(live.id)
                .and_then(|v| v.as_u64())
                .ok_or_else(|| err("a document has no fragment id"))?;
            hits.push(LexicalHit { id, score });
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        Ok(hits)
    }

    fn save(&self, dir: &Path) -> Result<()> {
        self.commit()?;
        let live = self.read();
        let target = MmapDirectory::open(dir)
            .map_err(|e| Error::io(dir, std::io::Error::other(e.to_string())))?;
        live.dir.persist(&target).map_err(err)
    }

    fn load(&self, dir: &Path) -> Result<()> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        let ram = RamDirectory::create();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(".tantivy-") || !entry.path().is_file() {
                continue;
            }
            let bytes = std::fs::read(entry.path()).map_err(|e| Error::io(&entry.path(), e))?;
            ram.atomic_write(Path::new(name), &bytes)
                .map_err(|e| Error::io(&entry.path(), e))?;
        }
        let index = Index::open(ram.clone()).map_err(|e| Error::corrupt(dir, e.to_string()))?;
        let live = Live::open(ram, index)?;
        // Touch every segment so damage shows now rather than at the first search.
        let searcher = live.reader.searcher();
        for segment in searcher.segment_readers() {
            segment
                .inverted_index(live.text)
                .map_err(|e| Error::corrupt(dir, e.to_string()))?;
            segment
                .fast_fields()
                .u64("id")
                .map_err(|e| Error::corrupt(dir, e.to_string()))?;
        }
        self.with_writer(|current| {
            *current = live;
            Ok(())
        })
    }
}
