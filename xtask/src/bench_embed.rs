//! `cargo xtask bench embed`: embedding throughput in texts per second.
//!
//! Measures the offline embedder always, and the local model when xtask is built with its
//! `local-model` feature and the model's files are present (`cargo xtask fetch-model minilm`).
//! The texts are synthetic short notes (8 to 16 words) from a fixed seed, so runs compare.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use colmem_llm::{Embedder, OfflineEmbedder};

/// Arguments of `cargo xtask bench embed`.
#[derive(clap::Args, Debug)]
pub struct BenchEmbedArgs {
    /// How many texts the offline embedder embeds.
    #[arg(long, default_value_t = 200_000)]
    pub texts: usize,
    /// How many texts the local model embeds.
    #[arg(long, default_value_t = 512)]
    pub local_texts: usize,
    /// Texts per call to `embed`.
    #[arg(long, default_value_t = 4096)]
    pub batch: usize,
    /// The local model's directory [default: models/minilm under the repository root].
    #[arg(long)]
    pub model_dir: Option<PathBuf>,
    /// Print `{"offline_texts_per_s": x, "local_texts_per_s": x|null}` as the last line.
    #[arg(long)]
    pub json: bool,
}

/// Runs `cargo xtask bench embed`.
pub fn run(args: &BenchEmbedArgs) -> anyhow::Result<()> {
    let batch = args.batch.max(1);
    let texts = notes(args.texts.max(1));
    let offline = OfflineEmbedder::default();
    // Warm up (page in code, grow allocations), then measure.
    throughput(&offline, &texts[..texts.len().min(batch)], batch)?;
    let offline_rate = throughput(&offline, &texts, batch)?;
    println!(
        "offline embedder {}: {:.0} texts/s ({} texts, batches of {batch}, {} threads)",
        offline.id(),
        offline_rate,
        texts.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );

    let local_rate = local(args)?;
    if args.json {
        let local = local_rate.map_or_else(|| "null".to_owned(), |r| format!("{r:.1}"));
        println!("{{\"offline_texts_per_s\": {offline_rate:.1}, \"local_texts_per_s\": {local}}}");
    }
    Ok(())
}

#[cfg(feature = "local-model")]
fn local(args: &BenchEmbedArgs) -> anyhow::Result<Option<f64>> {
    use colmem_llm::{LocalEmbedder, LocalModelConfig};

    let dir = args.model_dir.clone().unwrap_or_else(|| {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        manifest.parent().unwrap_or(manifest).join("models/minilm")
    });
    if !dir.join("model.safetensors").is_file() {
        println!(
            "local model: not measured, {} holds no model; run `cargo xtask fetch-model minilm`",
            dir.display()
        );
        return Ok(None);
    }
    let model = LocalEmbedder::load(&LocalModelConfig::new(&dir))?;
    let texts = notes(args.local_texts.max(1));
    throughput(&model, &texts[..texts.len().min(32)], 32)?;
    let rate = throughput(&model, &texts, 256)?;
    println!(
        "local model {}: {rate:.1} texts/s ({} texts)",
        model.id(),
        texts.len()
    );
    Ok(Some(rate))
}

#[cfg(not(feature = "local-model"))]
fn local(_args: &BenchEmbedArgs) -> anyhow::Result<Option<f64>> {
    println!("local model: not measured, xtask was built without its local-model feature");
    Ok(None)
}

/// Texts per second for embedding `texts` in calls of `batch`.
fn throughput(embedder: &dyn Embedder, texts: &[String], batch: usize) -> anyhow::Result<f64> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let start = Instant::now();
    let mut sink = 0.0f32;
    for chunk in refs.chunks(batch) {
        let vectors = embedder.embed(chunk)?;
        sink += vectors
            .first()
            .and_then(|v| v.first())
            .copied()
            .unwrap_or(0.0);
    }
    let elapsed = start.elapsed().max(Duration::from_nanos(1));
    std::hint::black_box(sink);
    Ok(texts.len() as f64 / elapsed.as_secs_f64())
}

/// `n` synthetic notes of 8 to 16 words, the same on every run.
fn notes(n: usize) -> Vec<String> {
    const WORDS: [&str; 48] = [
        "alice",
        "bob",
        "carol",
        "moved",
        "to",
        "berlin",
        "in",
        "march",
        "prefers",
        "tea",
        "over",
        "coffee",
        "the",
        "deployment",
        "failed",
        "because",
        "disk",
        "was",
        "full",
        "meeting",
        "with",
        "team",
        "about",
        "quarterly",
        "report",
        "deadline",
        "is",
        "friday",
        "allergic",
        "peanuts",
        "likes",
        "hiking",
        "on",
        "weekends",
        "server",
        "restarted",
        "after",
        "update",
        "booked",
        "flight",
        "lisbon",
        "next",
        "week",
        "her",
        "sister",
        "lives",
        "paris",
        "2024",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|_| {
            let len = 8 + (next() % 9) as usize;
            let words: Vec<&str> = (0..len).map(|_| WORDS[(next() % 48) as usize]).collect();
            words.join(" ")
        })
        .collect()
}
