//! `cargo xtask scenario cards`: ConMem strategy cards on a fixture task stream.
//!
//! `fixtures/cards/stream.toml` defines families of small quantitative tasks, each
//! hiding one decision the agent cannot settle from arithmetic alone; the agent's
//! default setting is wrong for half of the families, and families come in look-alike
//! pairs whose right settings differ. A seeded stream is drawn from the families and
//! solved twice by the same deterministic agent: without cards, and with a card bank
//! that composes cards for each task (prequentially: only cards written before the
//! task) and learns from the task's scored trajectory afterwards. The agent follows
//! the first `use`/`avoid` directive about its open decision in the composed text.
//!
//! The scorer's feedback says only right or wrong, so cards can learn which setting to
//! avoid on which kind of task, never an answer. Settings were tuned on the stream's
//! `tune_seed`; the figures are reported on `report_seed`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail, ensure};
use colmem_access::{AccessGraph, Context, SystemPolicy};
use colmem_cards::text::{Polarity, directives};
use colmem_cards::{
    BankConfig, Budget, Card, CardBank, Decision, Outcome, PruneReason, Reflection, Reflector,
    Roles, Step, TaskContext, Trajectory, Writer,
};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, CardSign, Clock, Edge, LogicalClock, Principal, Timestamp,
    UserId,
};
use colmem_llm::{ApproxTokenCounter, OfflineEmbedder};
use colmem_store::{FragmentStore, SqliteStore, StoreConfig};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    stream: StreamConfig,
    family: Vec<Family>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamConfig {
    tasks: usize,
    tasks_per_round: usize,
    infrastructure_error_rate: f64,
    tune_seed: u64,
    report_seed: u64,
    budget_tokens: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum TaskKind {
    Divide,
    Span,
    Days,
    Mean,
    Percent,
}

impl TaskKind {
    /// The settings of the kind's decision.
    fn options(self) -> [&'static str; 2] {
        match self {
            TaskKind::Divide => ["floor", "ceil"],
            TaskKind::Span | TaskKind::Days => ["exclusive", "inclusive"],
            TaskKind::Mean => ["arithmetic", "harmonic"],
            TaskKind::Percent => ["additive", "compound"],
        }
    }

    fn answer(self, setting: &str, a: f64, b: f64) -> f64 {
        let second = setting == self.options()[1];
        let raw = match (self, second) {
            (TaskKind::Divide, false) => (a / b).floor(),
            (TaskKind::Divide, true) => (a / b).ceil(),
            (TaskKind::Span, false) => a / b,
            (TaskKind::Span, true) => a / b + 1.0,
            (TaskKind::Days, false) => b - a,
            (TaskKind::Days, true) => b - a + 1.0,
            (TaskKind::Mean, false) => (a + b) / 2.0,
            (TaskKind::Mean, true) => 2.0 * a * b / (a + b),
            (TaskKind::Percent, false) => a,
            (TaskKind::Percent, true) => a * (1.0 + b / 100.0) * (1.0 - b / 100.0),
        };
        (raw * 100.0).round() / 100.0
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Family {
    name: String,
    kind: TaskKind,
    decision: String,
    default: String,
    correct: String,
    #[serde(default)]
    conditions: Vec<String>,
    a: [u32; 2],
    b: [u32; 2],
    templates: Vec<String>,
}

struct Task {
    id: String,
    family: usize,
    text: String,
    a: f64,
    b: f64,
    conditions: BTreeSet<String>,
    infrastructure_error: bool,
    round: u32,
}

fn load(root: &Path) -> Result<Fixture> {
    let path = root.join("fixtures/cards/stream.toml");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let fixture: Fixture =
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    for f in &fixture.family {
        let options = f.kind.options();
        ensure!(
            options.contains(&f.default.as_str()) && options.contains(&f.correct.as_str()),
            "family {}: default and correct must be among {options:?}",
            f.name
        );
        ensure!(
            !f.templates.is_empty() && f.a[0] <= f.a[1] && f.b[0] <= f.b[1] && f.b[0] > 0,
            "family {}: needs templates and ranges with low ≤ high, b ≥ 1",
            f.name
        );
    }
    ensure!(
        fixture.stream.tasks_per_round > 0,
        "tasks_per_round must be at least 1"
    );
    Ok(fixture)
}

fn generate(fixture: &Fixture, seed: u64) -> Vec<Task> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..fixture.stream.tasks)
        .map(|i| {
            let family = rng.usize(..fixture.family.len());
            let f = &fixture.family[family];
            let mut a = f64::from(rng.u32(f.a[0]..=f.a[1]));
            let b = f64::from(rng.u32(f.b[0]..=f.b[1]));
            if f.kind == TaskKind::Span {
                a *= b;
            }
            let template = &f.templates[rng.usize(..f.templates.len())];
            let text = template
                .replace("{a}", &format!("{a}"))
                .replace("{b}", &format!("{b}"));
            Task {
                id: format!("task-{i}"),
                family,
                text,
                a,
                b,
                conditions: f.conditions.iter().cloned().collect(),
                infrastructure_error: rng.f64() < fixture.stream.infrastructure_error_rate,
                round: (i / fixture.stream.tasks_per_round) as u32,
            }
        })
        .collect()
}

/// What the agent did on one task.
struct Attempt {
    setting: String,
    /// The polarity of the directive that set the decision, if a card did.
    decided_by: Option<Polarity>,
    trajectory: Trajectory,
}

/// The agent: parses the numbers, settles its one open decision (its default, unless
/// the composed cards say otherwise), computes, and answers.
fn solve(task: &Task, family: &Family, composed: &str) -> Attempt {
    let options = family.kind.options();
    let mut setting = family.default.clone();
    let mut decided_by = None;
    if let Some(d) = directives(composed)
        .into_iter()
        .find(|d| d.name == family.decision && options.contains(&d.value.as_str()))
    {
        match d.polarity {
            Polarity::Use => setting = d.value.clone(),
            Polarity::Avoid if d.value == setting => {
                setting = options
                    .iter()
                    .find(|o| **o != d.value)
                    .map_or(setting.clone(), |o| (*o).to_owned());
            }
            Polarity::Avoid => {}
        }
        decided_by = Some(d.polarity);
    }
    let answer = family.kind.answer(&setting, task.a, task.b);
    let expected = family.kind.answer(&family.correct, task.a, task.b);
    let correct = !task.infrastructure_error && (answer - expected).abs() < 0.005;
    let steps = if task.infrastructure_error {
        Vec::new()
    } else {
        vec![
            Step {
                action: format!("read the quantities {} and {}", task.a, task.b),
                decision: None,
            },
            Step {
                action: format!("settle {} before computing", family.decision),
                decision: Some(Decision {
                    name: family.decision.clone(),
                    chosen: setting.clone(),
                    alternatives: options
                        .iter()
                        .filter(|o| **o != setting)
                        .map(|o| (*o).to_owned())
                        .collect(),
                }),
            },
            Step {
                action: format!("compute and answer {answer}"),
                decision: None,
            },
        ]
    };
    let feedback = if task.infrastructure_error {
        "the tool timed out before an answer"
    } else if correct {
        "correct"
    } else {
        "wrong answer"
    };
    Attempt {
        setting,
        decided_by,
        trajectory: Trajectory {
            id: task.id.clone(),
            task: task.text.clone(),
            conditions: task.conditions.clone(),
            round: task.round,
            steps,
            outcome: Outcome {
                score: if correct { 1.0 } else { 0.0 },
                success: correct,
                feedback: feedback.to_owned(),
                infrastructure_error: task.infrastructure_error,
            },
        },
    }
}

#[derive(Serialize, Default, Clone)]
struct FamilyRow {
    family: String,
    tasks: usize,
    without_cards: f64,
    with_cards: f64,
}

#[derive(Serialize, Clone)]
struct Worse {
    task: String,
    family: String,
    setting_with_cards: String,
    decided_by: String,
}

#[derive(Serialize, Clone)]
struct SeedReport {
    seed: u64,
    tasks: usize,
    score_with_cards: f64,
    score_without_cards: f64,
    /// Tasks whose score cards raised from 0 to 1.
    improved: usize,
    /// Tasks whose score cards lowered from 1 to 0.
    worse: Vec<Worse>,
    /// Tasks whose composition held a warning ("avoid") card.
    warning_composed: usize,
    /// Tasks whose decision a warning card set, and how many of them it got right.
    warning_decided: usize,
    warning_decided_correct: usize,
    /// The score with cards when reflection is switched off (no warnings are written).
    score_without_warnings: Option<f64>,
    /// Share of composed cards the fixture labels relevant to the task.
    precision: f64,
    composed_cards: usize,
    pruned_share: f64,
    expanded: usize,
    pruned: usize,
    /// Pruned candidates by reason: duplicate, weaker side of a conflict, deferred constraint.
    pruned_duplicate: usize,
    pruned_conflict: usize,
    pruned_deferred: usize,
    budget_overruns: usize,
    cards_written: usize,
    cards_visible_at_end: usize,
    merged: usize,
    rejected_failures: usize,
    families: Vec<FamilyRow>,
}

#[derive(Serialize)]
struct Report {
    score_with_cards: f64,
    score_without_cards: f64,
    pruned_share: f64,
    budget_overruns: usize,
    precision: f64,
    worse_tasks: Vec<String>,
    score_without_warnings: Option<f64>,
    report_seed: u64,
    tune_seed: u64,
    tune: SeedReport,
    report: SeedReport,
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A reflector that learns nothing: the ablation that shows what warnings contribute.
#[derive(Debug)]
struct NoReflection;

impl Reflector for NoReflection {
    fn reflect(&self, _failure: &Trajectory) -> colmem_cards::Result<Option<Reflection>> {
        Ok(None)
    }
}

fn run_seed(fixture: &Fixture, seed: u64, warnings: bool) -> Result<SeedReport> {
    let tasks = generate(fixture, seed);
    let clock = Arc::new(LogicalClock::new(Timestamp::parse("2026-03-01T09:00:00Z")?));
    let store = Arc::new(SqliteStore::open_in_memory(StoreConfig {
        clock: clock.clone(),
        ..StoreConfig::default()
    })?);
    let user = UserId::new("cards-user")?;
    let agent = AgentId::new("cards-solver")?;
    let mut graph = AccessGraph::new();
    for change in [
        AccessChange::Register {
            principal: Principal::User(user),
        },
        AccessChange::Register {
            principal: Principal::Agent(agent),
        },
        AccessChange::Grant {
            edge: Edge::Invoke { user, agent },
            until: None,
        },
    ] {
        graph.apply(AccessEvent {
            at: clock.now(),
            change,
        })?;
    }
    let system = SystemPolicy::default();
    let mut roles = Roles::offline();
    if !warnings {
        roles.reflector = Arc::new(NoReflection);
    }
    let bank = CardBank::new(
        store.clone(),
        Arc::new(OfflineEmbedder::default()),
        Arc::new(ApproxTokenCounter),
        roles,
        BankConfig::default(),
    )?;
    let budget = Budget::new(fixture.stream.budget_tokens);
    // The fixture's relevance label: a card is relevant to a task when most of the
    // trajectories it came from belong to families with the same decision and the
    // same right setting.
    let family_of: BTreeMap<String, usize> =
        tasks.iter().map(|t| (t.id.clone(), t.family)).collect();
    let relevant = |task_family: usize, card: &Card| {
        let want = &fixture.family[task_family];
        let hits = card
            .sources
            .iter()
            .filter_map(|s| family_of.get(s))
            .filter(|f| {
                let f = &fixture.family[**f];
                f.decision == want.decision && f.correct == want.correct
            })
            .count();
        2 * hits >= card.sources.len().max(1)
    };

    let mut rows: Vec<FamilyRow> = fixture
        .family
        .iter()
        .map(|f| FamilyRow {
            family: f.name.clone(),
            ..FamilyRow::default()
        })
        .collect();
    let (mut with_total, mut without_total) = (0.0, 0.0);
    let (mut expanded, mut pruned, mut overruns, mut composed_cards, mut relevant_cards) =
        (0, 0, 0, 0, 0);
    let (mut improved, mut warning_decided, mut warning_correct, mut warning_composed) =
        (0, 0, 0, 0);
    let (mut written, mut merged, mut rejected) = (0, 0, 0);
    let mut worse = Vec::new();
    let mut reasons = [0usize; 3];
    for task in &tasks {
        let family = &fixture.family[task.family];
        let baseline = solve(task, family, "");

        clock.advance(1_000);
        let ctx = Context::new(user, agent, clock.as_ref());
        let filter = graph.compile(&ctx)?;
        let task_ctx = TaskContext {
            task: task.text.clone(),
            live: task.conditions.clone(),
            round: task.round,
        };
        let composition = bank.compose(&filter, &task_ctx, &budget)?;
        let attempt = solve(task, family, &composition.text);
        // The prediction is fixed: only now may its outcome be learned from.
        clock.advance(1);
        let learned = bank.learn(
            &Writer {
                graph: &graph,
                ctx: Context::new(user, agent, clock.as_ref()),
                system: &system,
                scope: None,
                policies: None,
            },
            std::slice::from_ref(&attempt.trajectory),
        )?;
        written += learned.written.len();
        merged += learned.merged;
        rejected += learned.rejected;

        let report = &composition.report;
        expanded += report.expanded.len();
        pruned += report.pruned.len();
        for p in &report.pruned {
            match p.reason {
                PruneReason::Duplicate { .. } => reasons[0] += 1,
                PruneReason::Conflict { .. } => reasons[1] += 1,
                PruneReason::Deferred { .. } => reasons[2] += 1,
            }
        }
        if report.tokens_used > report.budget {
            overruns += 1;
        }
        if composition
            .cards
            .iter()
            .any(|c| c.sign == CardSign::Negative)
        {
            warning_composed += 1;
        }
        for composed in &composition.cards {
            let card = Card::from_record(store.card(composed.id)?, None)?;
            composed_cards += 1;
            if relevant(task.family, &card) {
                relevant_cards += 1;
            }
        }
        let with = f64::from(attempt.trajectory.outcome.score);
        let without = f64::from(baseline.trajectory.outcome.score);
        with_total += with;
        without_total += without;
        let row = &mut rows[task.family];
        row.tasks += 1;
        row.with_cards += with;
        row.without_cards += without;
        if attempt.decided_by == Some(Polarity::Avoid) {
            warning_decided += 1;
            if attempt.setting == family.correct {
                warning_correct += 1;
            }
        }
        if with > without {
            improved += 1;
        }
        if with < without {
            worse.push(Worse {
                task: task.id.clone(),
                family: family.name.clone(),
                setting_with_cards: format!("{}={}", family.decision, attempt.setting),
                decided_by: match attempt.decided_by {
                    Some(Polarity::Use) => "strategy card".to_owned(),
                    Some(Polarity::Avoid) => "warning card".to_owned(),
                    None => "no card".to_owned(),
                },
            });
        }
    }
    for row in &mut rows {
        if row.tasks > 0 {
            row.with_cards /= row.tasks as f64;
            row.without_cards /= row.tasks as f64;
        }
    }
    let end = graph.compile(&Context::new(user, agent, clock.as_ref()))?;
    let visible = bank.visible_cards(&end)?;
    let warning_cards = visible
        .iter()
        .filter(|c| c.fields.sign == CardSign::Negative)
        .count();
    ensure!(
        !warnings || warning_cards > 0,
        "no warning card was written: reflection never fired"
    );
    Ok(SeedReport {
        seed,
        tasks: tasks.len(),
        score_with_cards: with_total / tasks.len().max(1) as f64,
        score_without_cards: without_total / tasks.len().max(1) as f64,
        improved,
        worse,
        warning_composed,
        warning_decided,
        warning_decided_correct: warning_correct,
        score_without_warnings: None,
        precision: share(relevant_cards, composed_cards),
        composed_cards,
        pruned_share: share(pruned, expanded),
        expanded,
        pruned,
        pruned_duplicate: reasons[0],
        pruned_conflict: reasons[1],
        pruned_deferred: reasons[2],
        budget_overruns: overruns,
        cards_written: written,
        cards_visible_at_end: visible.len(),
        merged,
        rejected_failures: rejected,
        families: rows,
    })
}

fn print_seed(label: &str, r: &SeedReport) {
    println!(
        "{label} seed {}: {} tasks, score with cards {:.3}, without {:.3} ({} improved, {} worse); \
         precision {:.3} of {} composed cards; pruned {}/{} expanded = {:.3} \
         ({} duplicates, {} conflicts, {} deferred); budget overruns {}; \
         {} cards written ({} merges), {} visible at the end; {} uninformative failures rejected; \
         warnings composed for {} tasks, set the decision on {}, rightly on {}; \
         score with cards but no warnings {:.3}",
        r.seed,
        r.tasks,
        r.score_with_cards,
        r.score_without_cards,
        r.improved,
        r.worse.len(),
        r.precision,
        r.composed_cards,
        r.pruned,
        r.expanded,
        r.pruned_share,
        r.pruned_duplicate,
        r.pruned_conflict,
        r.pruned_deferred,
        r.budget_overruns,
        r.cards_written,
        r.merged,
        r.cards_visible_at_end,
        r.rejected_failures,
        r.warning_composed,
        r.warning_decided,
        r.warning_decided_correct,
        r.score_without_warnings.unwrap_or(f64::NAN),
    );
}

fn print_table(r: &SeedReport) {
    println!(
        "{:<22} {:>6} {:>15} {:>12}",
        "family", "tasks", "without cards", "with cards"
    );
    for row in &r.families {
        println!(
            "{:<22} {:>6} {:>15.3} {:>12.3}",
            row.family, row.tasks, row.without_cards, row.with_cards
        );
    }
    println!(
        "{:<22} {:>6} {:>15.3} {:>12.3}",
        "all", r.tasks, r.score_without_cards, r.score_with_cards
    );
    if r.worse.is_empty() {
        println!("tasks where cards made the score worse: none");
    } else {
        println!("tasks where cards made the score worse:");
        for w in &r.worse {
            println!(
                "  {} ({}): {} set by {}",
                w.task, w.family, w.setting_with_cards, w.decided_by
            );
        }
    }
}

pub fn run(json: bool) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?;
    let fixture = load(root)?;
    if fixture.stream.tune_seed == fixture.stream.report_seed {
        bail!(
            "tune_seed and report_seed must differ: report on a seed the settings were not tuned on"
        );
    }
    let mut tune = run_seed(&fixture, fixture.stream.tune_seed, true)?;
    tune.score_without_warnings =
        Some(run_seed(&fixture, fixture.stream.tune_seed, false)?.score_with_cards);
    let mut report = run_seed(&fixture, fixture.stream.report_seed, true)?;
    report.score_without_warnings =
        Some(run_seed(&fixture, fixture.stream.report_seed, false)?.score_with_cards);
    print_seed("tuning", &tune);
    print_seed("report", &report);
    print_table(&report);
    ensure!(
        report.budget_overruns == 0,
        "{} compositions exceeded their budget",
        report.budget_overruns
    );
    if json {
        let out = Report {
            score_with_cards: report.score_with_cards,
            score_without_cards: report.score_without_cards,
            pruned_share: report.pruned_share,
            budget_overruns: report.budget_overruns,
            precision: report.precision,
            worse_tasks: report.worse.iter().map(|w| w.task.clone()).collect(),
            score_without_warnings: report.score_without_warnings,
            report_seed: report.seed,
            tune_seed: tune.seed,
            tune,
            report,
        };
        println!("{}", serde_json::to_string(&out)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_make_cards_beat_no_cards_within_budget_on_the_report_seed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let fixture = load(root).unwrap();
        let seed = fixture.stream.report_seed;
        let with = run_seed(&fixture, seed, true).unwrap();
        let no_warnings = run_seed(&fixture, seed, false).unwrap();
        assert_eq!(with.budget_overruns, 0);
        assert!(
            with.score_with_cards > with.score_without_cards + 0.2,
            "with cards {:.3}, without {:.3}",
            with.score_with_cards,
            with.score_without_cards
        );
        assert!(no_warnings.score_with_cards + 0.2 < with.score_with_cards);
        assert!(with.warning_decided > 0 && with.warning_composed > 0);
        assert!(
            with.pruned_share > 0.5,
            "pruned share {:.3}",
            with.pruned_share
        );
        assert!(with.precision > 0.5, "precision {:.3}", with.precision);
    }
}
