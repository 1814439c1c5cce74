/**
 * Persisted preset snapshots (SQLite, embedded default of the service state). A day's snapshot of a preset is written
 * once, in one transaction, and never changed: a second write of the same (preset, day) keeps the first and reports
 * whether the new rows were byte-identical (they must be: snapshots are computed only from data stamped that day or
 * before).
 */
import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { openSqlite } from './sqlite.ts';
import type { SnapshotRow } from '../core/rankings.ts';

export interface StoredSnapshot {
  preset: string;
  date: string;
  as_of: string;
  computed_at: string;
  top_k: number;
  sha256: string;
  rows: SnapshotRow[];
}

/** Canonical bytes of a snapshot's rows: the sha256 is taken over them. */
export function snapshotBytes(rows: readonly SnapshotRow[]): string {
  return rows.map((r) => `${r.rank}\t${r.key}\t${r.composite.toFixed(9)}`).join('\n');
}

export class SnapshotStore {
  readonly db: Database.Database;

  constructor(path: string) {
    this.db = openSqlite(path);
    this.db.exec(`CREATE TABLE IF NOT EXISTS preset_snapshots (
        preset TEXT NOT NULL, day TEXT NOT NULL, as_of TEXT NOT NULL, computed_at TEXT NOT NULL,
        top_k INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY (preset, day));
      CREATE TABLE IF NOT EXISTS preset_snapshot_rows (
        preset TEXT NOT NULL, day TEXT NOT NULL, rank INTEGER NOT NULL, key TEXT NOT NULL, composite TEXT NOT NULL,
        PRIMARY KEY (preset, day, rank));
      CREATE TRIGGER IF NOT EXISTS snapshot_rows_immutable BEFORE UPDATE ON preset_snapshot_rows
        BEGIN SELECT RAISE(ABORT, 'snapshots are immutable'); END;
      CREATE TRIGGER IF NOT EXISTS snapshots_immutable BEFORE UPDATE ON preset_snapshots
        BEGIN SELECT RAISE(ABORT, 'snapshots are immutable'); END;`);
  }

  /** Write a day's snapshot unless it exists; returns the stored one and whether the offered rows matched it. */
  put(s: Omit<StoredSnapshot, 'sha256'>): { stored: StoredSnapshot; created: boolean; identical: boolean } {
    const sha256 = createHash('sha256').update(snapshotBytes(s.rows)).digest('hex');
    const created = this.db.transaction(() => {
      const r = this.db
        .prepare(`INSERT OR IGNORE INTO preset_snapshots (preset, day, as_of, computed_at, top_k, sha256) VALUES (?, ?, ?, ?, ?, ?)`)
        .run(s.preset, s.date, s.as_of, s.computed_at, s.top_k, sha256);
      if (r.changes === 0) return false;
      const ins = this.db.prepare(`INSERT INTO preset_snapshot_rows (preset, day, rank, key, composite) VALUES (?, ?, ?, ?, ?)`);
      // composites are kept as their 9-decimal text so reading them back reproduces the same bytes
      for (const row of s.rows) ins.run(s.preset, s.date, row.rank, row.key, row.composite.toFixed(9));
      return true;
    })();
    const stored = this.get(s.preset, s.date)!;
    return { stored, created, identical: stored.sha256 === sha256 };
  }

  get(preset: string, date: string): StoredSnapshot | null {
    const head = this.db.prepare(`SELECT * FROM preset_snapshots WHERE preset = ? AND day = ?`).get(preset, date) as
      | { preset: string; day: string; as_of: string; computed_at: string; top_k: number; sha256: string }
      | undefined;
    if (!head) return null;
    const rows = this.db.prepare(`SELECT rank, key, composite FROM preset_snapshot_rows WHERE preset = ? AND day = ? ORDER BY rank`).all(preset, date) as {
      rank: number;
      key: string;
      composite: string;
    }[];
    return {
      preset: head.preset,
      date: head.day,
      as_of: head.as_of,
      computed_at: head.computed_at,
      top_k: head.top_k,
      sha256: head.sha256,
      rows: rows.map((r) => ({ rank: r.rank, key: r.key, composite: Number(r.composite) })),
    };
  }

  /** The latest stored day of a preset (for "omit date for latest"). */
  latest(preset: string): StoredSnapshot | null {
    const r = this.db.prepare(`SELECT day FROM preset_snapshots WHERE preset = ? ORDER BY day DESC LIMIT 1`).get(preset) as { day: string } | undefined;
    return r ? this.get(preset, r.day) : null;
  }

  days(preset: string): string[] {
    return (this.db.prepare(`SELECT day FROM preset_snapshots WHERE preset = ? ORDER BY day`).all(preset) as { day: string }[]).map((r) => r.day);
  }

  close(): void {
    this.db.close();
  }
}
