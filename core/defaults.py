"""Every tunable Flux constant: one table, read by settings, docs and config files.

Each entry is (name, default, description). The type of the default is the type
the environment value is parsed as. Nothing here imports Django.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str
    default: object
    group: str
    description: str


def _group(group: str, *rows: tuple[str, object, str]) -> list[Setting]:
    return [Setting(name, default, group, text) for name, default, text in rows]


SETTINGS: list[Setting] = [
    *_group(
        "retrieval",
        ("TOP_K", 5, "Grains returned by a retrieval when the caller gives no limit."),
        ("MAX_TOP_K", 100, "Largest limit a caller may ask a retrieval for."),
        ("MAX_QUERY_CHARS", 2000, "Longest query accepted, in characters."),
        ("ENTRY_POINTS", 50, "Lexical hits taken as entry points of a retrieval."),
        ("ENTRY_RELAY", 20, "Best entry points that relay signal to their neighbours."),
        ("QUERY_MAX_TERMS", 24, "Most query terms matched, the rarest first."),
        ("COMMON_TERM_FRACTION", 0.05, "A query term in more than this fraction of grains (and COMMON_TERM_MIN_DOCS) is not matched, unless no other is left and it is in fewer than half the grains; then only among the newest grains that have it, as many as this bound."),
        ("COMMON_TERM_MIN_DOCS", 2000, "Terms in fewer grains than this are always matched (small memories match every term)."),
        ("ATTENUATION", 0.85, "Signal kept per hop, multiplied with the conduit weight."),
        ("MAX_HOPS", 3, "Hops the signal may travel from an entry point."),
        ("ACTIVATION_THRESHOLD", 0.05, "Relayed signal below this (top entry = 1.0) is pruned."),
        ("HUB_DEGREE", 8, "A grain with more conduits than this relays signal damped by sqrt(HUB_DEGREE/degree)."),
        ("MAX_FRONTIER", 256, "Most grains relaying signal at one hop (the strongest are kept)."),
        ("DORMANT_RELAY", 0.3, "Factor on the signal a dormant grain relays (active grains relay 1.0)."),
        ("RECENCY_HALF_LIFE_DAYS", 30.0, "Half-life of the recency factor, from the last access of a grain."),
        ("RECENCY_FLOOR", 0.5, "Smallest recency factor, for grains not accessed in a long time."),
        ("ARCHIVE_SEARCH", True, "When live grains give fewer entry points than the limit, search archived grains too (those returned come back to active)."),
        ("SUPERSEDED_RANK_FACTOR", 0.9, "A superseded grain ranks at most this fraction of its successor's score (its successor takes its place)."),
        ("CLUSTER_NEIGHBOUR_WEIGHT", 0.1, "Weight of the weak link from a relaying grain to its cluster's hubs (0 turns cluster neighbours off)."),
        ("TEMPORAL_BOOST", 1.0, "Entry hits dated within a date the query names ('on May 23, 2023', 'in July 2023', 'in June') have their match signal multiplied by 1 + this; a grain's date is occurred_at, else when it was stored (0 turns it off)."),
        ("SEMANTIC_ENTRY", "auto", "Semantic entry points from the local embedding model: auto (used when its packages are installed, as they are by default), on (required: refuse to start without them) or off."),
        ("SPEAKER_BOOST", 2.0, "A grain spoken by someone the query names ('What did Ana paint?' against 'Ana: ...') ranks this many times higher; 1.0 switches it off."),
        ("SEMANTIC_ENTRY_POINTS", 20, "Grains nearest in meaning to the query added as entry points."),
        ("SEMANTIC_WEIGHT", 0.5, "Entry signal the nearest semantic hit adds (the best lexical hit has 1.0); the one at rank r adds SEMANTIC_WEIGHT / (1 + r / SEMANTIC_RANK_DECAY)."),
        ("SEMANTIC_RANK_DECAY", 10.0, "How slowly the signal of semantic hits falls with their rank."),
        ("SEMANTIC_APPROX_FROM", 20000, "From this many vectors the semantic search uses an approximate (HNSW) index, built in the background and kept in the data folder's vectors/; below it the search is exact. About 99% of the exact 30 nearest are found, in under a millisecond at 100,000 or 1,000,000."),
        ("GRAPH_MIRROR", True, "Each process keeps an in-memory copy of the grains' rank fields, the conduits and the clusters' hubs for retrieval, kept current from a change log the database's triggers write (on SQLite and PostgreSQL alike). About 2.5 KB a grain with its conduits (230-265 MB at 100,000 grains)."),
        ("RERANK_WINDOW", 30, "Best grains of a retrieval that the learned ranker re-orders (0 turns re-ranking off)."),
    ),
    *_group(
        "learning",
        ("LEARNING_RATE", 0.1, "Weight added to the conduits on a useful grain's path (and to co-useful associations)."),
        ("GRAIN_LEARNING_RATE", 0.0, "Weight added to a grain itself on useful feedback, beyond keeping it at least as alive as a new grain (it then ranks higher for every query: off by default, the learned ranker and cues learn what is useful for which query)."),
        ("DECAY_FACTOR", 0.85, "Factor on the weight of the conduits on a grain's path on not-useful feedback."),
        ("NOT_USEFUL_GRAIN_FACTOR", 1.0, "Factor on a grain's own weight on not-useful feedback (1.0: none; not useful for one query need not mean useless for others)."),
        ("WEIGHT_MIN", 0.05, "Lowest weight of a grain or conduit."),
        ("WEIGHT_MAX", 0.95, "Highest weight of a grain or conduit."),
        ("INITIAL_GRAIN_WEIGHT", 0.5, "Weight of a newly stored grain."),
        ("CO_USEFUL_WEIGHT", 0.3, "Weight of an association conduit created between two grains useful in one retrieval."),
        ("SHORTCUT_THRESHOLD", 1, "Useful retrievals over 2+ hops from one entry grain before a shortcut conduit is made."),
        ("SHORTCUT_WEIGHT", 0.5, "Weight of a new shortcut conduit."),
        ("PROMOTION_THRESHOLD", 3, "Useful feedbacks after which a grain moves to the core decay tier."),
        ("CUE_LEARNING", True, "Useful feedback attaches the query's words that a grain lacks to it as learned cues, searched beside its content (how feedback teaches the search, not only the graph)."),
        ("CUE_WEIGHT", 0.5, "What a word found in a grain's learned cues counts for in the lexical score, against 1.0 in its content."),
        ("CUE_MAX_TERMS", 24, "Most learned cue words kept per grain; the oldest go first."),
        ("RANKER_RATE", 0.04, "Step of a learned ranker feature weight (length, question, direct hit, match, when, speaker, meaning, self) per pair of a useful and a not-useful grain of one retrieval."),
        ("RANKER_WORD_RATE", 0.01, "Step of the learned weight of a query word per such pair, when one grain of the pair has the word and the other not."),
        ("RANKER_MAX_WEIGHT", 2.0, "Bound on every learned ranker weight (either sign)."),
        ("RANKER_MIN_MATCH_WEIGHT", -0.5, "Lowest learned weight of the match strength (above -1: the ranker may soften how much a better match counts, never reverse it)."),
        ("HIGHWAY_WEIGHT", 0.8, "A conduit at least this strong is a highway (a strong path, counted by the health signals)."),
    ),
    *_group(
        "decay",
        ("HALF_LIFE_CORE_DAYS", 30.0, "Weight half-life of core grains (promoted by repeated usefulness)."),
        ("HALF_LIFE_WORKING_DAYS", 7.0, "Weight half-life of working grains (the default tier)."),
        ("HALF_LIFE_EPHEMERAL_DAYS", 2.0, "Weight half-life of ephemeral grains."),
        ("CONDUIT_HALF_LIFE_DAYS", 14.0, "Weight half-life of an unused conduit."),
        ("CONDUIT_GRACE_HOURS", 72.0, "A new conduit does not decay during this time."),
        ("DORMANT_WEIGHT", 0.1, "An active grain whose decayed weight falls below this goes dormant."),
        ("DORMANT_AFTER_DAYS", 30.0, "An active grain not accessed for this long goes dormant."),
        ("ARCHIVE_AFTER_DAYS", 90.0, "A grain dormant (and unused) this long is archived; archived grains are kept and can be found again."),
        ("QUARANTINE_MIN_RATED", 10, "Ratings a grain needs before its usefulness can quarantine it."),
        ("QUARANTINE_MAX_USEFULNESS", 0.2, "A grain useful in fewer than this fraction of at least QUARANTINE_MIN_RATED ratings is quarantined."),
    ),
    *_group(
        "epistemic",
        ("EPISTEMIC_ENABLED", True, "Compare each new grain with its nearest grains for supports / contradicts / supersedes / caused_by."),
        ("EPISTEMIC_CANDIDATES", 5, "Nearest existing grains a new grain is compared with."),
        ("EPISTEMIC_LLM_JUDGE", False, "In the periodic epistemic pass, ask the LLM (OLLAMA_URL, LLM_MODEL) about near pairs the rules leave unrelated."),
        ("EPISTEMIC_PASS_BATCH", 200, "New grains the periodic epistemic pass examines per run."),
        ("RELATION_CONDUIT_WEIGHT", 0.5, "Weight of a typed relation conduit (supports, contradicts, supersedes, caused_by)."),
        ("CORROBORATION_BOOST", 0.05, "Confidence added when another caller stores the same content, or a grain supports it."),
        ("CONTRADICTION_PENALTY", 0.1, "Confidence taken from both grains of a contradiction."),
        ("CONTRADICTION_QUARANTINE_MARGIN", 0.3, "The less believed grain of a contradiction is quarantined when the other is believed at least this much more."),
        ("CONFIDENCE_USEFUL_STEP", 0.02, "Confidence added by useful feedback."),
        ("CONFIDENCE_NOT_USEFUL_STEP", 0.01, "Confidence taken by not-useful feedback."),
        ("CONFIDENCE_FLOOR", 0.2, "A grain whose confidence falls below this is quarantined."),
        ("CONFIDENCE_MAX", 0.99, "Highest confidence."),
        ("CONFIDENCE_NEUTRAL", 0.5, "Confidence drifts down toward this with age (never up)."),
        ("CONFIDENCE_HALF_LIFE_DAYS", 180.0, "Half-life of that drift."),
    ),
    *_group(
        "dreams",
        ("DREAM_LLM", False, "Ask the LLM (OLLAMA_URL, LLM_MODEL) for each abstraction; off: an extractive summary of the most central grains."),
        ("DREAM_PER_CYCLE", 5, "Most clumps consolidated by one dream cycle (the best scored first)."),
        ("DREAM_MIN_SOURCES", 3, "Fewest grains a clump needs to be consolidated."),
        ("DREAM_MAX_SOURCES", 6, "Most grains of a clump (its most connected members) given to one abstraction."),
        ("DREAM_MIN_INTERNAL_WEIGHT", 0.2, "Least mean conduit weight inside a cluster for it to be dreamt of."),
        ("DREAM_RECENT_DAYS", 7.0, "A clump none of whose grains was used this recently scores half."),
        ("DREAM_SUMMARY_STATEMENTS", 2, "Most central statements merged into an extractive summary."),
        ("DREAM_GATE_MIN_SUPPORT", 0.8, "Least fraction of a sentence's content words found in the sources for the gate to accept it (numbers and names must all be found)."),
        ("DREAM_CONDUIT_WEIGHT", 0.2, "Weight of the abstracts conduits from an abstraction to its sources."),
        ("RETRIEVE_ABSTRACTIONS", 2, "Abstractions returned beside the grains of a retrieval (they take no grain's place)."),
    ),
    *_group(
        "clustering",
        ("CLUSTER_RESOLUTION", 1.0, "Louvain resolution (higher: more, smaller clusters)."),
        ("CLUSTER_SEED", 7, "Random seed of the clustering, so a rerun on the same graph gives the same clusters."),
        ("CLUSTER_MIN_SIZE", 3, "Communities smaller than this are not kept as clusters."),
        ("CLUSTER_MIN_OVERLAP", 0.3, "A new community keeps an old cluster's identity when they share at least this fraction of members."),
        ("CLUSTER_HUBS", 3, "Most connected members of a cluster kept as its hubs."),
        ("CLUSTER_LABEL_TERMS", 3, "Distinctive terms in a cluster's label."),
    ),
    *_group(
        "service",
        ("OPERATING_MODE", "caller_extracts", "caller_extracts: agents store atomic facts; flux_extracts: an LLM extracts them from raw text."),
        ("OLLAMA_URL", "http://127.0.0.1:11434", "Ollama server used in flux_extracts mode."),
        ("LLM_MODEL", "llama3.1:8b", "Ollama model that extracts facts in flux_extracts mode."),
        ("LLM_TIMEOUT_SECONDS", 120.0, "Longest wait for the LLM's answer."),
        ("EXTRACT_FALLBACK", "error", "When the LLM fails in flux_extracts mode: error (store nothing) or caller_extracts (store the text as given, with a warning)."),
        ("REST_HOST", "127.0.0.1", "Address the REST API binds to."),
        ("REST_PORT", 7465, "Port of the REST API."),
        ("DASHBOARD_HOST", "127.0.0.1", "Address the dashboard binds to (`flux start --broadcast` makes it 0.0.0.0)."),
        ("DASHBOARD_PORT", 7462, "Port of the dashboard (pages, read-only data, websocket; never the write API)."),
        ("MCP_HOST", "127.0.0.1", "Address the MCP server over streamable HTTP binds to (beyond loopback only with API keys)."),
        ("MCP_PORT", 7464, "Port of the MCP server over streamable HTTP (`flux start` runs it beside REST; path /mcp)."),
        ("WEB_WORKERS", 1, "REST processes `flux start` runs, sharing REST_PORT (the kernel spreads connections over them); each loads its own graph mirror. `flux start --web-workers N` sets it."),
        ("TASK_WORKERS", 1, "Celery worker processes `flux start` runs (the first embeds beat). `flux start --workers N` sets it."),
        ("BEAT_LEASE_SECONDS", 30.0, "How long the beat that sends the periodic tasks holds its lease: every worker may embed a beat, one sends, another takes over this long after it stops."),
        ("STOP_GRACE_SECONDS", 30.0, "How long `flux stop` (and Ctrl-C) waits for each service to finish its queued writes before killing it."),
        ("RESTART_BACKOFF_SECONDS", 1.0, "Wait before `flux start`'s supervisor restarts a service that died; doubled at each death in a row."),
        ("RESTART_BACKOFF_MAX_SECONDS", 60.0, "Longest wait between restarts of a service that keeps dying (reset once it stays up a minute)."),
        ("DASHBOARD_FULL_GRAPH_MAX", 3000, "Grains up to which the dashboard draws every grain at once; above it, clusters first and members on zoom."),
        ("DASHBOARD_MAX_EDGES", 20000, "Most conduits the dashboard draws in one view (the strongest)."),
        ("DASHBOARD_POLL_SECONDS", 0.5, "How often the dashboard process reads new activity-log events to relay to open pages."),
        ("READ_WORKERS", 3, "Threads serving reads (retrieve, listings, health) concurrently."),
        ("MAX_WRITE_QUEUE_DEPTH", 1000, "Writes waiting in the serial write queue before new ones get 503."),
        ("TRACE_COMMIT_SECONDS", 0.25, "Retrieval traces queued within this long of the first are written and committed together (on SQLite each commit empties every reader's page cache; on PostgreSQL one trace a transaction kept the writer under 70 retrievals a second); a crash loses at most this long of traces. 0 commits each at once."),
        ("MAX_GRAINS_PER_MINUTE", 500, "Grains one caller may store per minute (a batch of 100 counts 100)."),
        ("ADMIN_LINK_SECONDS", 300, "How long a `flux admin` login link stays valid (it works once)."),
        ("PURGE_RESTORE_WINDOW_HOURS", 24.0, "How long a purged (or forgotten) grain can be restored exactly as it was, conduits included."),
        ("FEEDBACK_ENFORCEMENT_ENABLED", True, "Refuse retrievals to a caller that owes feedback."),
        ("FEEDBACK_ENFORCEMENT_GRACE_SECONDS", 60, "Age of a retrieval before its missing feedback blocks the caller."),
        ("FEEDBACK_ENFORCEMENT_MAX_BLOCK_SECONDS", 86400, "Age after which missing feedback no longer blocks."),
    ),
    *_group(
        "access",
        ("API_KEYS", "", "Comma-separated client:key pairs; with these (or keys added by `flux keys add`) every REST call (the MCP bridge's too) needs `Authorization: Bearer <key>` and the key decides the client."),
        ("API_KEY", "", "The key this instance's own clients send (the MCP bridge, `flux status`, the SDK's connect); written by `flux keys add --local`."),
        ("RATE_RETRIEVE", "600/m", "Retrievals one client may make (N/s, N/m, N/h or N/d); more get 429 with Retry-After."),
        ("RATE_FEEDBACK", "1200/m", "Feedback calls one client may make."),
        ("RATE_LISTING", "300/m", "Listings (grains, grain dossiers, traces, callers, relations, clusters, dreams) one client may read."),
        ("RATE_DASHBOARD", "600/m", "Dashboard searches and activity pages one address may request."),
        ("RATE_LOGIN_LINK", "10/m", "Admin login-link uses one address may try."),
        ("ADMIN_SESSION_HOURS", 8.0, "An admin session ends after this long, or when the browser closes."),
        ("MAX_DATABASE_MB", 0, "Largest the SQLite database may grow, in MB (0: as large as the disk allows); past it writes get 507 like on a full disk, reads go on."),
        ("MAX_REQUEST_BYTES", 4194304, "Largest request body accepted; a larger one is answered 413 before it is parsed (the rest of it dropped, up to 4 times this, so that the client reads the answer)."),
    ),
    *_group(
        "maintenance",
        ("DECAY_INTERVAL_SECONDS", 3600, "How often Celery beat runs the decay sweep."),
        ("BROKER_CLEANUP_INTERVAL_SECONDS", 3600, "How often consumed messages are purged from the embedded broker."),
        ("CLUSTER_INTERVAL_SECONDS", 21600, "How often Celery beat re-clusters the graph whatever changed (feedback and decay reshape it too)."),
        ("CLUSTER_CHECK_SECONDS", 120, "How often Celery beat checks whether the graph grew enough since the last clustering to re-cluster now."),
        ("CLUSTER_GROWTH_GRAINS", 50, "Grains stored since the last clustering that make the check re-cluster."),
        ("CLUSTER_GROWTH_FRACTION", 0.1, "Or this fraction of the grains clustered last time (a young memory re-clusters sooner)."),
        ("EPISTEMIC_INTERVAL_SECONDS", 3600, "How often Celery beat runs the epistemic pass over newly stored grains."),
        ("DREAM_INTERVAL_SECONDS", 21600, "How often Celery beat runs the dream cycle."),
        ("HEALTH_INTERVAL_SECONDS", 300, "How often Celery beat takes a health snapshot (and raises or clears warnings)."),
        ("BACKUP_KEEP", 0, "Daily backups kept in the instance's backups/ folder (0: none are taken; `flux backup` works either way)."),
        ("BACKUP_INTERVAL_SECONDS", 86400, "How often Celery beat takes one of those backups when BACKUP_KEEP > 0."),
        ("FEEDBACK_SWEEP_SECONDS", 60, "How often Celery beat applies feedback accepted but left unapplied (by a service killed between its 202 and applying it)."),
        ("EMBED_INTERVAL_SECONDS", 600, "How often Celery beat embeds grains that have no vector yet (semantic entry on only)."),
        ("HEALTH_RETENTION_DAYS", 30.0, "Health snapshots and counters older than this are deleted."),
    ),
    *_group(
        "alerts",
        ("TELEGRAM_BOT_TOKEN", "", "Telegram bot token; with TELEGRAM_CHAT_ID set, each new health warning is sent there."),
        ("TELEGRAM_CHAT_ID", "", "Telegram chat that receives the alerts."),
        ("TELEGRAM_API_URL", "https://api.telegram.org", "Telegram Bot API base URL."),
        ("ALERT_RETRIES", 3, "Attempts to send one alert before it is given up (and logged)."),
        ("ALERT_BACKOFF_SECONDS", 2.0, "Wait before the second attempt; doubled before each further one."),
    ),
    *_group(
        "storing",
        ("MAX_CONTENT_CHARS", 4000, "Longest grain content accepted, in characters."),
        ("MAX_GRAINS_PER_CALL", 100, "Most grains in one batch store."),
        ("STORE_LINK_NEIGHBOURS", 3, "Lexical neighbours a new grain is linked to by association conduits."),
        ("STORE_LINK_TERMS", 5, "Rarest terms of a new grain used to find its lexical neighbours."),
        ("STORE_LINK_MAX_DOCS", 200, "Terms in more grains than this are never used to find lexical neighbours, even when a grain has no other (keeps storing flat in cost)."),
        ("STORE_LINK_MIN_SIMILARITY", 0.25, "Least lexical similarity (neighbour score / self score) for such a link."),
        ("LEXICAL_CONDUIT_WEIGHT", 0.3, "Weight of a lexical-neighbour conduit at similarity 1.0 (scaled by similarity)."),
        ("CONTEXT_LINKS", 2, "Previous grains of the same context a new grain is linked to."),
        ("CONTEXT_CONDUIT_WEIGHT", 0.4, "Weight of a conduit between grains stored in the same context."),
        ("CONTEXT_MAX_GAP_HOURS", 24.0, "Grains of one context further apart in time than this are not linked."),
        ("PRIOR_USER_STATED", 0.9, "Initial confidence of a grain with provenance user_stated."),
        ("PRIOR_OBSERVED", 0.8, "Initial confidence of a grain with provenance observed."),
        ("PRIOR_AI_STATED", 0.7, "Initial confidence of a grain with provenance ai_stated."),
        ("PRIOR_IMPORTED", 0.7, "Initial confidence of a grain with provenance imported."),
        ("PRIOR_AI_INFERRED", 0.5, "Initial confidence of a grain with provenance ai_inferred."),
        ("PRIOR_CONSOLIDATED", 0.6, "Initial confidence of a grain with provenance consolidated."),
    ),
]

DEFAULTS: dict[str, object] = {s.name: s.default for s in SETTINGS}

# Text settings that take one of a few values.
CHOICES: dict[str, tuple[str, ...]] = {
    "OPERATING_MODE": ("caller_extracts", "flux_extracts"),
    "EXTRACT_FALLBACK": ("error", "caller_extracts"),
    "SEMANTIC_ENTRY": ("auto", "on", "off"),
}


def markdown_table() -> str:
    """The settings table of docs/settings.md (regenerate with ``python -m core.defaults --docs``)."""
    rows = ["| Setting | Default | Group | What it does |", "|---|---|---|---|"]
    for s in SETTINGS:
        default = str(s.default).lower() if isinstance(s.default, bool) else s.default
        rows.append(f"| `{s.name}` | `{default}` | {s.group} | {s.description} |")
    return "\n".join(rows)


DEFAULT_ALLOWED_HOSTS = "127.0.0.1,localhost,[::1],testserver"

INFRASTRUCTURE = [
    ("FLUX_DATA_DIR", "var/ in the checkout", "Folder of the instance: SQLite database, broker file, cache."),
    ("DATABASE_URL", "", "postgres://user:pass@host:5432/name selects PostgreSQL."),
    ("REDIS_URL", "", "Redis for the Celery broker and the rate-limit cache."),
    ("SECRET_KEY", "random, in secret.key of the instance folder",
     "Signs admin links and sessions; at least 32 random characters when set (never derived from a path)."),
    ("DEBUG", "false", "Django debug mode."),
    ("ALLOWED_HOSTS", DEFAULT_ALLOWED_HOSTS, "Host names the service answers to."),
    ("LOG_LEVEL", "WARNING", "Root log level."),
]


def env_example() -> str:
    """.env.example: every environment variable, commented at its default (``--env-example`` writes it)."""
    lines = ["# Flux Memory reads these from the environment; every one is optional.", ""]
    for name, default, text in INFRASTRUCTURE:
        lines += [f"# {text} Default: {default or 'unset'}.", f"# {name}="]
    group = None
    for s in SETTINGS:
        if s.group != group:
            group = s.group
            lines += ["", f"# --- {group} ---"]
        default = str(s.default).lower() if isinstance(s.default, bool) else s.default
        lines += [f"# {s.description}", f"# {s.name}={default}"]
    return "\n".join(lines) + "\n"


def _rewrite_settings_doc(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index("\n", text.index("<!-- settings:start")) + 1
    end = text.index("<!-- settings:end -->")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:start] + markdown_table() + "\n" + text[end:])


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--docs"]:
        _rewrite_settings_doc(sys.argv[2] if len(sys.argv) > 2 else "docs/settings.md")
    elif sys.argv[1:2] == ["--env-example"]:
        with open(".env.example", "w", encoding="utf-8") as f:
            f.write(env_example())
    else:
        print(markdown_table())
