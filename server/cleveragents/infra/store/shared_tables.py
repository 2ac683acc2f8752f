"""The tables both stores lay out alike: sessions, and plans with what hangs off them.

Only the auto-numbered key differs between SQLite and PostgreSQL, so each store's
migrations take these texts with its own ``seq`` column. They are part of applied
migrations: never edit them; a change is a new migration in each store.
"""

from __future__ import annotations


def sessions_table(seq: str) -> str:
    """``seq``: the column definition of the auto-numbered key, in the store's SQL."""
    return f"""
    CREATE TABLE sessions (
        seq {seq},
        session_id TEXT NOT NULL UNIQUE,
        actor_name TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        closed_at TEXT,
        metadata TEXT NOT NULL DEFAULT '{{}}'
    );
    CREATE INDEX sessions_by_status ON sessions (status, seq);
"""


def plan_tables(seq: str) -> str:
    """Plans, their decisions, overlays, checkpoints and artifacts, and context pins."""
    return f"""
    CREATE TABLE plans (
        seq {seq},
        plan_id TEXT NOT NULL UNIQUE,
        session_id TEXT,
        state TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX plans_by_session ON plans (session_id, seq);
    CREATE INDEX plans_by_state ON plans (state, seq);
    CREATE TABLE plan_decisions (
        seq {seq},
        plan_id TEXT NOT NULL REFERENCES plans (plan_id),
        decision_id TEXT NOT NULL,
        body TEXT NOT NULL,
        UNIQUE (plan_id, decision_id)
    );
    CREATE INDEX plan_decisions_by_plan ON plan_decisions (plan_id, seq);
    CREATE TABLE plan_overlay (
        plan_id TEXT NOT NULL REFERENCES plans (plan_id),
        path TEXT NOT NULL,
        position INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (plan_id, path)
    );
    CREATE TABLE plan_checkpoints (
        plan_id TEXT PRIMARY KEY REFERENCES plans (plan_id),
        checkpoint TEXT NOT NULL
    );
    CREATE TABLE plan_artifacts (
        seq {seq},
        plan_id TEXT NOT NULL REFERENCES plans (plan_id),
        artifact_id TEXT NOT NULL,
        record TEXT NOT NULL,
        UNIQUE (plan_id, artifact_id)
    );
    CREATE INDEX plan_artifacts_by_plan ON plan_artifacts (plan_id, seq);
    CREATE TABLE context_pins (
        seq {seq},
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        UNIQUE (scope, key)
    );
    CREATE INDEX context_pins_by_scope ON context_pins (scope, seq);
"""
