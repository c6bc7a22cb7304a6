-- Runs and their statistics. Portable SQL: SQLite and PostgreSQL both run
-- this file as it is.

-- One row per run. Times are nanoseconds since 1970 (UTC), which sort and
-- round-trip exactly on both databases; root_seed is decimal text because
-- a uint64 does not fit BIGINT; flags is a JSON object.
CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    scenario      TEXT NOT NULL,
    scenario_hash TEXT NOT NULL,
    policy        TEXT NOT NULL,
    policy_hash   TEXT NOT NULL,
    root_seed     TEXT NOT NULL,
    seeds         BIGINT NOT NULL,
    load          DOUBLE PRECISION NOT NULL,
    code_version  TEXT NOT NULL,
    flags         TEXT NOT NULL,
    started       BIGINT NOT NULL,
    finished      BIGINT,
    run_key       TEXT NOT NULL,
    sweep         TEXT NOT NULL,
    shard         TEXT NOT NULL
);
CREATE INDEX runs_run_key ON runs (run_key);
CREATE INDEX runs_scenario ON runs (scenario);
CREATE INDEX runs_policy ON runs (policy);
CREATE INDEX runs_started ON runs (started);
CREATE INDEX runs_sweep ON runs (sweep);

-- A run's statistics: class '' is the whole run, class_pos keeps the
-- classes' order (0 for the whole run, then 1, 2, ...). NULL is NaN, which
-- SQLite cannot store.
CREATE TABLE run_stats (
    run_id    TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    class     TEXT NOT NULL,
    class_pos BIGINT NOT NULL,
    name      TEXT NOT NULL,
    mean      DOUBLE PRECISION,
    ci95      DOUBLE PRECISION,
    PRIMARY KEY (run_id, class, name)
);
